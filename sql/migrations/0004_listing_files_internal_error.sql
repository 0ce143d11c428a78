-- A file whose preparation failed (paperwatch raised, or its worker died or went over the
-- memory ceiling) is quarantined whole with internal_error = true; it is read again only
-- when its bytes change or another paperwatch version runs (paperwatch_version).
alter table listing_files add column if not exists internal_error boolean default false;
update listing_files set internal_error = false where internal_error is null;
alter table listing_files add column if not exists paperwatch_version varchar;
