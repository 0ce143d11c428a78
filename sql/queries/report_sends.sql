-- Every send of one week to one reader ($reader, or null: the plain recipients' message)
-- (kinds sending | sent | failed), oldest first.
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
where week = $week and kind in ('sending', 'sent', 'failed') and reader is not distinct from $reader
order by report_id
