-- Listing formats: readers for Markdown digests, one abstract per line, JSON, JSON Lines,
-- BibTeX and Atom/RSS feeds (paperwatch.ingest.readers). What a structured format gives beside
-- the abstract is kept on each occurrence and, as first seen, on the paper (null for the
-- plain-text format, which has none). An occurrence's paper_id is the paper it is an
-- occurrence of: its text's id, or, when its external_id (arXiv id, DOI, OpenReview id)
-- names a paper already loaded with another text, that paper (an edited abstract is a
-- revision of the same paper); text_paper_id then keeps the id of the occurrence's own text
-- (null when it is the paper's).
alter table paper_occurrences add column if not exists title varchar;
alter table paper_occurrences add column if not exists authors varchar[];
alter table paper_occurrences add column if not exists url varchar;
alter table paper_occurrences add column if not exists external_id varchar;
alter table paper_occurrences add column if not exists text_paper_id varchar;
alter table papers add column if not exists title varchar;
alter table papers add column if not exists authors varchar[];
alter table papers add column if not exists url varchar;
alter table papers add column if not exists external_id varchar;
-- The reader that read each file and why it was chosen; files recorded before were all
-- read as plain-text listings.
alter table listing_files add column if not exists format varchar;
alter table listing_files add column if not exists format_reason varchar;
update listing_files set format = 'text', format_reason = 'recorded before other formats were read'
where format is null and status <> 'quarantined';
