-- One row per (paper, term): the terms of each paper's clean abstract, as extracted by
-- paperwatch.analysis.terms.extract_terms (rules in docs/terms.md). A term's document frequency is
-- its number of rows. Written by paperwatch.db.trends.update_paper_terms, which replaces a
-- paper's rows as a whole, so (paper_id, term) is unique (not declared: an index over tens of
-- millions of rows would cost more than it checks). first_seen_week repeats the paper's
-- (papers never change week) so that a week's document frequencies read only that week's
-- rows: rows are appended in loading order, and DuckDB skips row groups by their min/max.
create table if not exists paper_terms (
    paper_id varchar not null,             -- papers.paper_id
    term varchar not null,                 -- canonical form: "kv cache" → "KV cache", "LLMs" → "LLM"
    n integer not null,                    -- occurrences in the abstract, >= 1
    first_seen_week varchar                -- papers.first_seen_week of paper_id
);
