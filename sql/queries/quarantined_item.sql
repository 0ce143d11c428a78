-- One quarantine row ($quarantine_id), with the venue and year of its file, for a release.
select
    q.kind,
    q.file_id,
    q.path,
    q.position,
    q.line,
    q.raw_text,
    q.released_at,
    q.released_by,
    q.reasons,
    q.record_fields,
    f.venue,
    f.year
from quarantine as q
left join listing_files as f using (file_id)
where q.quarantine_id = $quarantine_id
