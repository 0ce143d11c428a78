-- One row per loaded entry of a listing file. Exact duplicates are papers with
-- more than one occurrence.
create table if not exists paper_occurrences (
    file_id integer not null,
    position integer not null,             -- 1-based index of the entry in its file
    line integer not null,                 -- 1-based line where the entry starts
    paper_id varchar not null,
    raw_text varchar using compression zstd not null,  -- the entry as written (hard wraps
                                           -- joined with a space; zstd: see papers.sql)
    run_id varchar not null,               -- (file_id, position) is unique (see sql/tables/papers.sql)
    listed_number integer,                 -- the list number the entry was written with (1., [3]), or null
    title varchar,                         -- what a structured format gives beside the abstract
    authors varchar[],                     --   (null for the plain-text format; migration 0005)
    url varchar,
    external_id varchar,                   -- arXiv:2611.01234, doi:10.…, openreview:…
    text_paper_id varchar,                 -- paper_id of this entry's own text when external_id
                                           -- joined it to a paper with another text, else null
    field_faults varchar,                  -- what making title/authors/url/external_id safe
                                           -- changed, one line per field, else null (0009)
    raw_fields varchar                     -- those fields as written (JSON) when it changed any
);
