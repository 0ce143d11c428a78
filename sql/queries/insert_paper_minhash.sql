-- Store signatures from `new_minhash` (paper_id, signature: the caller's Arrow table;
-- paperwatch.db.duplicates).
insert into paper_minhash (paper_id, scheme, signature, computed_at)
select paper_id, $scheme, signature, $at from new_minhash
