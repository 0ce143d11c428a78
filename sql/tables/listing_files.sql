-- One row per version of a listing: a path with its content (an earlier content
-- restored at the same path is a new version). A byte-identical copy under another
-- path is a row with status 'duplicate' pointing at the original; one found at a new path
-- when the original's path is gone is a row with status 'moved' pointing at it.
create sequence if not exists listing_files_seq start 1;
create table if not exists listing_files (
    file_id integer primary key default nextval('listing_files_seq'),
    sha256 varchar not null,               -- of the file's bytes
    path varchar not null,                 -- as found, relative to the watched folder when inside it
    name varchar not null,
    sequence_number integer,               -- NNN of NNN_<hex>.txt, null for other names
    size_bytes bigint not null,
    mtime_ns bigint not null,              -- last stat seen; with size it lets a re-scan skip the read
    venue varchar,
    year integer,
    header varchar,                        -- the header line as written, null when absent
    entry_count integer,                   -- entries parsed (null when the file could not be parsed)
    entries_loaded integer,
    entries_quarantined integer,
    status varchar not null,               -- loaded | quarantined | duplicate | moved
    duplicate_of integer,                  -- file_id of the original, for status 'duplicate' or 'moved'
    supersedes integer,                    -- file_id of the previous version at the same path
    reason varchar,                        -- why quarantined, or what it duplicates
    internal_error boolean not null default false, -- quarantined because preparing it failed
    paperwatch_version varchar,            -- the paperwatch that recorded the row (null: before 0004)
    format varchar,                        -- the reader: text, lines, markdown, json, jsonl, yaml, bibtex, feed
    format_reason varchar,                 -- why: by extension, by content, pinned, or ambiguous
    first_seen timestamptz not null,       -- the run's clock when first seen
    first_seen_week varchar not null,      -- ISO week of first_seen in the configured time zone
    loaded_at timestamptz,
    run_id varchar not null
);
