-- The ISO weeks of $weeks (all weeks when null) whose cached term counts (and acronym
-- definitions) are missing or out of date: the week's fingerprint now (see sql/tables/term_weeks.sql) differs from the one
-- recorded in term_weeks, or the week has no papers now but is cached. Rows: week and its
-- fingerprint now (papers, extracted, term_rows), by week.
with extracted as (
    select
        p.first_seen_week as week,
        count(*) as papers,
        bit_xor(hash(p.paper_id, e.extractor_version, e.terms, e.extracted_at)) as extracted
    from papers as p
    left join paper_terms_extracted as e on p.paper_id = e.paper_id
    where $weeks is null or list_contains($weeks, p.first_seen_week)
    group by p.first_seen_week
),

term_rows as (
    select
        first_seen_week as week,
        count(*) as term_rows
    from paper_terms
    where
        first_seen_week is not null
        and ($weeks is null or list_contains($weeks, first_seen_week))
    group by first_seen_week
),

now as (
    select
        coalesce(x.week, r.week) as week,
        coalesce(x.papers, 0) as papers,
        coalesce(x.extracted, 0)::ubigint as extracted,
        coalesce(r.term_rows, 0) as term_rows
    from extracted as x
    full outer join term_rows as r on x.week = r.week
),

cached as (
    select
        week,
        papers,
        extracted,
        term_rows
    from term_weeks
    where $weeks is null or list_contains($weeks, week)
)

select
    coalesce(n.week, c.week) as week,
    coalesce(n.papers, 0) as papers,
    coalesce(n.extracted, 0)::ubigint as extracted,
    coalesce(n.term_rows, 0) as term_rows
from now as n
full outer join cached as c on n.week = c.week
where
    (c.week is null and (n.papers > 0 or n.term_rows > 0))
    or n.week is null
    or n.papers <> c.papers
    or n.extracted <> c.extracted
    or n.term_rows <> c.term_rows
order by 1;
