-- Record a dry run: the message was written to a file, nothing was delivered.
insert into reports (
    week, reader, kind, path, sha256, message_sha256, recipients, message_id, transport, attempts,
    resend, happened_at
)
values (
    $week, $reader, 'dry_run', $path, $sha256, $message_sha256, $recipients, $message_id, $transport, 1,
    false, $at
)
returning report_id
