-- Items quarantined in $week (released or not), for the report.
select
    quarantine_id,
    kind,
    path,
    position,
    line,
    reasons,
    released_by,
    coalesce(left(raw_text, 160), '') as preview
from quarantine
where week = $week
order by quarantine_id
