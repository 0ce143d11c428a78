-- Weeks whose last send to some reader (or to the plain recipients) failed and that were
-- never sent to them: the next scheduled run retries them.
-- A week whose last row is 'sending' (the process died mid-send) is not listed: it may have
-- been delivered, so only an explicit resend sends it again.
with sends as (
    select
        week,
        reader,
        kind,
        report_id
    from reports
    where kind in ('sending', 'sent', 'failed')
),

per_reader as (
    select
        week,
        reader,
        arg_max(kind, report_id) as last_kind,
        bool_or(kind = 'sent') as ever_sent
    from sends
    group by week, reader
)

select distinct week
from per_reader
where last_kind = 'failed' and not ever_sent
order by week
