-- One row per distinct abstract. paper_id is the first 16 hex digits of the
-- sha256 of the normalised text (markup removed, NFKC, case-folded, spaces collapsed).
-- paper_id is unique, kept so by the loader (paperwatch.db.load), not by a primary key: in
-- the v1.5 storage format DuckDB rewrites a table with an index whole at every checkpoint,
-- which made each small run cost as much as the whole table (bench/RESULTS.md). The same
-- holds for paper_occurrences, paper_minhash and paper_terms_extracted; tests check it.
-- The long text columns (abstract, abstract_raw, first_sentence) are stored with zstd rather
-- than DuckDB's default pick (dictionary + FSST): measured on 45,001 generated abstracts,
-- the checkpoint that writes them took half the CPU (0.66-0.76 against 1.34-1.39 CPU-s) and
-- the table half the bytes (40 against 77 MB); migration 0008, bench/RESULTS.md.
create table if not exists papers (
    paper_id varchar not null,             -- unique (see above)
    abstract varchar using compression zstd not null,      -- clean text: markup removed, NFKC,
                                           -- spaces collapsed (zstd: see above)
    abstract_raw varchar using compression zstd not null,  -- as first seen (hard wraps joined)
    method_name varchar,                   -- the name the abstract introduces, or null
    first_sentence varchar using compression zstd not null,
    word_count integer not null,
    code_urls varchar[] not null,
    venue varchar,
    year integer,
    first_file_id integer not null,
    first_position integer not null,
    first_seen timestamptz not null,       -- the run's clock when first loaded
    first_seen_week varchar not null,      -- ISO week of first_seen in the configured time zone
    title varchar,                         -- as first seen, where the format has one (migration 0005)
    authors varchar[],
    url varchar,
    external_id varchar                    -- arXiv:2611.01234, doi:10.…, openreview:…; joins exact duplicates
);
