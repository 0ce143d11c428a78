-- Paths in the watched folder that are not listing files (not .txt, temporary files,
-- folders named *.txt, broken links). Each is mentioned once, in the run that first saw it.
create table if not exists ignored_paths (
    path varchar primary key,              -- relative to the watched folder
    reason varchar not null,
    first_seen timestamptz not null,
    run_id varchar not null
);
