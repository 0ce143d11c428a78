-- Papers with an occurrence loaded in $week and more than one occurrence in all,
-- with every file and position they appear in.
with occurrences as (
    select o.paper_id, o.file_id, o.position, f.name, f.first_seen_week as week, f.first_seen
    from paper_occurrences o
    join listing_files f using (file_id)
    where f.first_seen_week <= $week
),
repeated as (
    select paper_id
    from occurrences
    group by paper_id
    having count(*) > 1 and bool_or(week = $week)
)
select
    p.paper_id,
    p.method_name,
    p.first_sentence,
    p.abstract,
    list(
        {'file': o.name, 'position': o.position, 'week': o.week}
        order by o.first_seen, o.name, o.position
    ) as occurrences
from repeated r
join papers p using (paper_id)
join occurrences o using (paper_id)
group by all
order by min(o.first_seen), p.paper_id
