-- Every rejected file or entry, with what was rejected and why. Nothing is dropped.
create sequence if not exists quarantine_seq start 1;
create table if not exists quarantine (
    quarantine_id integer primary key default nextval('quarantine_seq'),
    kind varchar not null,                 -- file | entry
    file_id integer,                       -- null when the file could not be registered
    path varchar not null,
    position integer,                      -- entry position, null for a whole file
    line integer,                          -- 1-based line of the entry or of the fault
    raw_text varchar,                      -- the entry, or the decodable part of a file
    raw_bytes blob,                        -- a whole file's bytes when it is not text
    record_fields varchar,                 -- an entry's title, authors, url, external_id (JSON)
    reasons varchar[] not null,            -- plain-language reasons, one per failed check
    expectations varchar[] not null,       -- the failed expectations (suite.expectation)
    quarantined_at timestamptz not null,   -- the run's clock
    week varchar not null,                 -- ISO week of quarantined_at in the configured time zone
    run_id varchar not null,
    released_at timestamptz,
    released_by varchar,
    release_note varchar
);
