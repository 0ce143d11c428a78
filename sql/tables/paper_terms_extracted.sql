-- Which papers have had their terms extracted, by which version of the rules. A paper with no
-- term at all has a row here and none in paper_terms; a paper extracted by an older
-- extractor_version is extracted again by paperwatch.db.trends.update_paper_terms.
create table if not exists paper_terms_extracted (
    paper_id varchar not null,             -- unique (see sql/tables/papers.sql)
    extractor_version integer not null,    -- paperwatch.analysis.terms.EXTRACTOR_VERSION
    terms integer not null,                -- rows written to paper_terms
    extracted_at timestamptz not null
);
