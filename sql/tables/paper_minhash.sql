-- One MinHash signature per paper (near-duplicate detection, paperwatch/dedup.py).
-- A paper without a row here has not been compared yet; rows of another scheme
-- (other shingle/MinHash/LSH settings) are rebuilt on the next run.
create table if not exists paper_minhash (
    paper_id varchar not null,             -- unique (see sql/tables/papers.sql)
    scheme varchar not null,               -- e.g. shingle-v1/w3c3/rensa-rminhash-v2/seed20260101/perm128/b21r6/t0.8
    signature uinteger[] not null,         -- num_perm minimum hash values (rensa RMinHash)
    computed_at timestamptz not null       -- the run's clock
);
