-- Papers first seen in each of the ISO weeks $weeks (weeks without papers are absent).
select
    first_seen_week as week,
    count(*) as papers
from papers
where list_contains($weeks, first_seen_week)
group by first_seen_week
order by week;
