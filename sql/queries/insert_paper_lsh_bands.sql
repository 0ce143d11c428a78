-- Store band keys from `new_bands` (band, band_key, paper_id) and mark the papers of
-- `new_minhash` pending (the caller's Arrow tables; paperwatch.db.duplicates).
insert into paper_lsh_bands (band, band_key, paper_id)
select band, band_key, paper_id from new_bands;
insert into paper_lsh_pending (paper_id) select paper_id from new_minhash
