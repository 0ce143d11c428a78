-- Papers first seen in each of the ISO weeks $weeks (weeks without papers are absent), and
-- their words (sum of word_count: the size of the week's text).
select
    first_seen_week as week,
    count(*) as papers,
    sum(word_count) as words
from papers
where list_contains($weeks, first_seen_week)
group by first_seen_week
order by week;
