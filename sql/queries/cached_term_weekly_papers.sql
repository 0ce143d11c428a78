-- The rows of sql/queries/term_weekly_papers.sql (same parameters): papers per term and
-- week read from the per-week cache term_week_stats for terms no alias touches, counted
-- from paper_terms for the expansions of $canonicals (a paper with both counts once).
with alias_names as (
    select unnest(list_concat($acronyms::varchar[], $canonicals::varchar[])) as term
),

direct as (
    select
        term,
        week,
        papers::bigint as papers
    from term_week_stats
    where
        week between $first and $last
        and list_contains($weeks, week)
        and term in (select unnest($terms::varchar[]))
        and term not in (select term from alias_names)
),

mapped as (
    select
        coalesce(($canonicals::varchar[])[list_position($acronyms::varchar[], term)], term)
            as term,
        paper_id,
        first_seen_week as week
    from paper_terms
    where
        first_seen_week between $first and $last
        and list_contains($weeks, first_seen_week)
        and term in (select term from alias_names)
)

select
    term,
    week,
    papers
from direct
union all
select
    term,
    week,
    count(distinct paper_id) as papers
from mapped
where list_contains($terms, term)
group by term, week
order by term, week;
