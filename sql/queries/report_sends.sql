-- Every send of one week (kinds sending | sent | failed), oldest first.
select
    report_id,
    kind,
    recipients,
    message_id,
    transport,
    attempts,
    resend,
    error,
    started_at,
    happened_at
from reports
where week = $week and kind in ('sending', 'sent', 'failed')
order by report_id
