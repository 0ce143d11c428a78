-- The weekly report of issue 17: per-reader sends and related earlier papers.
-- reports.reader: a send is once per week and reader (null: the plain recipients' message).
alter table reports add column if not exists reader varchar;
-- related_papers is created by sql/tables/related_papers.sql (nothing to copy).
-- Method names are read again with the rules of paperwatch/method_names.py for the papers
-- the new rules can change (no name yet, or TeX or a macro in the text):
-- python: paperwatch.ingest.names.reread_method_names
