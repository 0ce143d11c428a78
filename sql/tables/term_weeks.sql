-- The weeks cached in term_week_stats, each with the fingerprint of the week when its rows
-- (and those of term_week_definitions) were computed (paperwatch.db.term_weeks): papers of
-- the week, a hash of their ids and paper_terms_extracted rows (extractor version, term
-- count, extraction time: every write of a paper's terms rewrites that row), and the week's
-- paper_terms rows. A week whose fingerprint differs now (papers loaded, terms extracted
-- again, a re-keyed or rebuilt file) is counted again before its rows are used.
create table if not exists term_weeks (
    week varchar primary key,              -- ISO week
    papers bigint not null,                -- papers of the week
    extracted ubigint not null,            -- bit_xor of hash(paper_id, its extracted row)
    term_rows bigint not null,             -- paper_terms rows of the week
    computed_at timestamptz not null
);
