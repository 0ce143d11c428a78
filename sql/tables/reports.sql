-- One row per rendered or sent weekly report.
create table if not exists reports (
    week varchar not null,                 -- ISO week, e.g. 2026-W48
    kind varchar not null,                 -- rendered | sent | failed
    path varchar,
    sha256 varchar,                        -- of the HTML body
    recipients varchar[],
    message_id varchar,
    error varchar,
    happened_at timestamptz not null
);
