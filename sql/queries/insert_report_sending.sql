-- Record a send before its first delivery attempt; returns the new report_id.
insert into reports (
    week, reader, kind, sha256, message_sha256, recipients, message_id, transport, attempts, resend,
    started_at, happened_at
)
values (
    $week, $reader, 'sending', $sha256, $message_sha256, $recipients, $message_id, $transport, 0, $resend,
    $started_at, $started_at
)
returning report_id
