-- Papers by the ISO week they were first seen, with the file they came from.
create or replace view new_papers_by_week as
select
    p.first_seen_week as week,
    p.paper_id,
    p.method_name,
    p.first_sentence,
    p.word_count,
    p.code_urls,
    p.venue,
    p.year,
    f.name as source_file,
    p.first_position as position,
    p.first_seen,
    p.abstract
from papers p
join listing_files f on f.file_id = p.first_file_id;
