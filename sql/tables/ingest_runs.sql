-- One row per ingestion run: what it saw and what it did. Times are UTC.
create table if not exists ingest_runs (
    run_id varchar primary key,
    started_at timestamptz not null,
    finished_at timestamptz,
    as_of timestamptz not null,            -- the run's clock ("now"), set by --as-of for backfills
    week varchar not null,                 -- ISO week of as_of in the configured time zone, e.g. 2026-W48
    folder varchar not null,
    files_seen integer not null default 0,
    files_loaded integer not null default 0,
    files_unchanged integer not null default 0,
    files_duplicate integer not null default 0,
    files_quarantined integer not null default 0,
    entries integer not null default 0,
    entries_loaded integer not null default 0,
    entries_quarantined integer not null default 0,
    new_papers integer not null default 0,
    exact_duplicates integer not null default 0,
    near_duplicates integer not null default 0,
    status varchar not null default 'running',  -- running | completed | failed | interrupted (marked by the next run)
    error varchar
);
