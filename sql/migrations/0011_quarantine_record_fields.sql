-- What a quarantined entry's format said beside its text (a title-only record's authors, a
-- newsletter title whose summary was too short): its title, authors, url and external_id as
-- a JSON object, so that quarantining an entry loses none of it. Entries quarantined before
-- kept their text only: null.
alter table quarantine add column if not exists record_fields varchar;
