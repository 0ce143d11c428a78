-- What a copy of a recorded listing file takes from its original ($file_ids): the same
-- bytes give the same parse.
select
    file_id,
    venue,
    year,
    header,
    format,
    format_reason,
    coalesce(entry_count, 0) as entry_count
from listing_files
where list_contains($file_ids, file_id)
