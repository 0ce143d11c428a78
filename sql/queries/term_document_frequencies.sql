-- Document frequencies of terms per ISO week: papers first seen in the week $week and in each
-- baseline week of $baseline that use each term, one row per (term, week) with papers > 0.
-- An acronym of $acronyms counts as its expansion at the same position of $canonicals (the
-- corpus defines it: paperwatch.analysis.terms.acronym_aliases), so a paper is counted once per
-- canonical term. $first and $last bound all those weeks: a range DuckDB pushes into the
-- scan, so that only their row groups are read. Only terms that can pass the minimum support
-- are returned (the others are never shown, and a busy week has millions of them): at least
-- $min_support papers this week, or, with a baseline ($n_baseline > 0), a baseline rate that
-- would give $min_support of the $n_week papers of this week
-- (paperwatch.analysis.trend_stats.score_trending_terms).
-- One aggregation by term over the weeks' rows decides the support and counts this week;
-- only the supported terms' rows of the baseline weeks are then counted per week (none in a
-- first week), instead of counting every (term, week) and aggregating those again.
with week_rows as not materialized (
    select
        term,
        paper_id,
        first_seen_week as week
    from paper_terms
    where
        first_seen_week between $first and $last
        and (first_seen_week = $week or list_contains($baseline, first_seen_week))
),

-- Rows of an acronym or its expansion, under the canonical term: a paper with both counts
-- once (count(distinct paper_id); a paper is in one week only).
aliased as not materialized (
    select
        coalesce(($canonicals::varchar[])[list_position($acronyms::varchar[], term)], term)
            as term,
        paper_id,
        week
    from week_rows
    where
        list_contains($acronyms::varchar[], term)
        or list_contains($canonicals::varchar[], term)
),

-- Terms no alias touches: one row per (paper, term), so count(*) counts papers.
direct as not materialized (
    select
        term,
        week
    from week_rows
    where
        not list_contains($acronyms::varchar[], term)
        and not list_contains($canonicals::varchar[], term)
),

totals as (
    select
        term,
        count(*) filter (where week = $week) as papers_week,
        count(*) filter (where week <> $week) as papers_baseline
    from direct
    group by term
    union all
    select
        term,
        count(distinct paper_id) filter (where week = $week) as papers_week,
        count(distinct paper_id) filter (where week <> $week) as papers_baseline
    from aliased
    group by term
),

supported as (
    select
        term,
        papers_week
    from totals
    where
        papers_week >= $min_support
        or (
            $n_baseline > 0
            and papers_baseline * $n_week >= $min_support * $n_baseline
        )
),

baseline as (
    select
        d.term,
        d.week,
        count(*) as papers
    from direct as d
    semi join supported as s on d.term = s.term
    where d.week <> $week
    group by d.term, d.week
    union all
    select
        a.term,
        a.week,
        count(distinct a.paper_id) as papers
    from aliased as a
    semi join supported as s on a.term = s.term
    where a.week <> $week
    group by a.term, a.week
)

select
    term,
    $week as week,
    papers_week as papers
from supported
where papers_week > 0
union all
select
    term,
    week,
    papers
from baseline
order by term, week;
