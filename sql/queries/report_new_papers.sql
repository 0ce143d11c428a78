-- Papers first seen in $week, in the order they were loaded (only what the report and
-- its CSV show: a week can hold hundreds of thousands of papers). venue, year and
-- sequence_number are the listing file's, for the source line a reader can place
-- ("NeurIPS 2026 · listing 002 · #12"); source_file (the file name) is for the CSV.
select
    p.paper_id,
    p.method_name,
    p.first_sentence,
    p.code_urls,
    f.name as source_file,
    p.first_position as position,
    f.venue,
    f.year,
    f.sequence_number,
    p.title,                                   -- where the format has one (else null)
    array_to_string(p.authors, '; ') as authors,
    p.url,
    p.external_id
from papers p
join listing_files f on f.file_id = p.first_file_id
where p.first_seen_week = $week
order by f.first_seen, f.path, p.first_position
