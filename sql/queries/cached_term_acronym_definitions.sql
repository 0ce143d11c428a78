-- The rows of sql/queries/term_acronym_definitions.sql (same parameters, same rows): the
-- papers that may define one of $acronyms are read from the per-week cache
-- term_week_definitions instead of searching every abstract of the weeks $weeks again.
with defining as (
    select distinct paper_id
    from term_week_definitions
    where
        week between $first and $last
        and list_contains($weeks, week)
        and acronym in (select unnest($acronyms::varchar[]))
    order by paper_id
    limit $limit
)

select
    p.paper_id,
    p.abstract
from papers as p
semi join defining as d on p.paper_id = d.paper_id
order by p.paper_id;
