-- One row per rendered report, dry run, or send of a weekly report. Times are UTC.
-- A send is recorded before the first delivery attempt as kind 'sending' and updated to
-- 'sent' or 'failed' afterwards, so a process that dies mid-send leaves a 'sending' row:
-- the week may or may not have been delivered, and only an explicit resend sends it again.
-- Sends are once per week and reader (migration 0006 added `reader`).
create sequence if not exists reports_seq start 1;
create table if not exists reports (
    report_id integer primary key default nextval('reports_seq'),
    week varchar not null,                 -- ISO week, e.g. 2026-W48
    kind varchar not null,                 -- rendered | dry_run | sending | sent | failed
    path varchar,                          -- rendered file, or the .eml a dry run wrote
    sha256 varchar,                        -- of the HTML body (UTF-8 bytes of the HTML part)
    message_sha256 varchar,                -- of the whole message as sent (RFC 5322 bytes, CRLF)
    recipients varchar[],
    message_id varchar,
    transport varchar,                     -- e.g. smtp://mail.example.org:587 (starttls)
    attempts integer,                      -- delivery attempts made (1 + retries used)
    resend boolean not null default false, -- sent again on purpose (--resend)
    error varchar,                         -- why the last attempt failed; refused recipients
    started_at timestamptz,                -- first delivery attempt
    happened_at timestamptz not null,      -- when the row reached its kind
    reader varchar                         -- a reader's own message (smtp.readers); null: the plain recipients'
);
