-- LSH band keys of each paper in paper_minhash: papers sharing a (band, band_key)
-- are candidate near-duplicates, verified by exact Jaccard before being recorded.
create table if not exists paper_lsh_bands (
    band smallint not null,                -- 0-based band number
    band_key ubigint not null,             -- 64-bit hash of the band's rows of the signature
    paper_id varchar not null
);
