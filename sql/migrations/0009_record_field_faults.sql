-- Record fields made safe at read time (paperwatch.untrusted.safe_entry): what was changed
-- in an occurrence's title, authors, url or external_id, and those fields as written.
-- Occurrences loaded before were not checked: both stay null.
alter table paper_occurrences add column if not exists field_faults varchar;
alter table paper_occurrences add column if not exists raw_fields varchar;
