-- Quarantined files and entries, oldest first; released ones only when $include_released.
select
    q.quarantine_id,
    q.kind,
    q.path,
    q.position,
    q.line,
    q.reasons,
    q.expectations,
    q.quarantined_at,
    q.week,
    q.released_at,
    q.released_by,
    q.release_note,
    coalesce(left(q.raw_text, 200), '') as preview,
    octet_length(q.raw_bytes) as raw_bytes
from quarantine q
where $include_released or q.released_at is null
order by q.quarantine_id
