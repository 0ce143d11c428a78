-- Store the long text columns with zstd (sql/tables/papers.sql says why): papers.abstract,
-- abstract_raw and first_sentence, paper_occurrences.raw_text. DuckDB cannot change a
-- column's compression in place, so both tables are renamed; paperwatch.db.apply_schema
-- creates each again from sql/tables/ and copies its rows (in their order) in the same
-- transaction. A one-off cost on upgrade, about as long as loading the rows once more.
alter table papers rename to _rebuild_papers;
alter table paper_occurrences rename to _rebuild_paper_occurrences;
