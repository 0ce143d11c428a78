-- Document frequencies of terms per ISO week: papers first seen in the week $week and in each
-- baseline week of $baseline that use each term, one row per (term, week) with papers > 0.
-- An acronym of $acronyms counts as its expansion at the same position of $canonicals (the
-- corpus defines it: paperwatch.terms.acronym_aliases), so a paper is counted once per
-- canonical term. $first and $last bound all those weeks: a range DuckDB pushes into the
-- scan, so that only their row groups are read. Only terms that can pass the minimum support
-- are returned (the others are never shown, and a busy week has millions of them): at least
-- $min_support papers this week, or, with a baseline ($n_baseline > 0), a baseline rate that
-- would give $min_support of the $n_week papers of this week
-- (paperwatch.trend_stats.score_trending_terms).
with week_rows as (
    select
        term,
        paper_id,
        first_seen_week as week
    from paper_terms
    where
        first_seen_week between $first and $last
        and (first_seen_week = $week or list_contains($baseline, first_seen_week))
),

-- Terms no alias touches: one row per (paper, term), so count(*) counts papers.
direct as (
    select
        term,
        week,
        count(*) as papers
    from week_rows
    where
        not list_contains($acronyms::varchar[], term)
        and not list_contains($canonicals::varchar[], term)
    group by term, week
),

-- An acronym and its expansion: a paper with both counts once.
merged as (
    select
        canonical as term,
        week,
        count(distinct paper_id) as papers
    from (
        select
            coalesce(($canonicals::varchar[])[list_position($acronyms::varchar[], term)], term)
                as canonical,
            week,
            paper_id
        from week_rows
        where
            list_contains($acronyms::varchar[], term)
            or list_contains($canonicals::varchar[], term)
    )
    group by canonical, week
),

per_week as (
    select * from direct
    union all
    select * from merged
),

supported as (
    select term
    from per_week
    group by term
    having
        sum(papers) filter (where week = $week) >= $min_support
        or (
            $n_baseline > 0
            and coalesce(sum(papers) filter (where week <> $week), 0) * $n_week
            >= $min_support * $n_baseline
        )
)

select
    p.term,
    p.week,
    p.papers
from per_week as p
semi join supported as s on p.term = s.term
order by p.term, p.week;
