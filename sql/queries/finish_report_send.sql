-- Close a send recorded by insert_report_sending: kind becomes 'sent' or 'failed'.
update reports
set
    kind = $kind,
    attempts = $attempts,
    error = $error,
    happened_at = $at
where report_id = $report_id
returning report_id
