-- Drop the primary keys of the four tables that grow with every paper: in the v1.5 storage
-- format DuckDB rewrites a table with an index whole at each checkpoint, so a one-file run
-- on a large database cost as much as rewriting it. The loader keeps the keys unique.
-- paperwatch.db.apply_schema creates each renamed table again from sql/tables/ and copies
-- its rows.
alter table papers rename to _rebuild_papers;
alter table paper_occurrences rename to _rebuild_paper_occurrences;
alter table paper_minhash rename to _rebuild_paper_minhash;
alter table paper_terms_extracted rename to _rebuild_paper_terms_extracted;
