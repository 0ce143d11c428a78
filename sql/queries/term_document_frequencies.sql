-- Document frequency of each term among the papers first seen in the ISO weeks $weeks.
-- $first and $last are the least and greatest of $weeks: a range DuckDB can push into the
-- scan, so that only the row groups of those weeks are read.
select
    term,
    count(*) as papers
from paper_terms
where
    first_seen_week between $first and $last
    and list_contains($weeks, first_seen_week)
group by term
order by term;
