-- The rows of sql/queries/term_document_frequencies.sql (same parameters, same rows, in no
-- order: paperwatch.db.trends sorts them by term and week, faster than DuckDB), counted from the per-week cache term_week_stats (paperwatch.db.term_weeks:
-- every week read is up to date) instead of paper_terms. Only the acronyms of $acronyms and
-- their expansions $canonicals are counted from paper_terms, as there, since a paper with
-- both counts once.
-- A term is supported with at least $min_support papers this week, or a baseline rate that
-- gives $min_support of this week's $n_week papers; its baseline papers are then at least
-- $min_support * $n_baseline / $n_week, so one of the len($baseline) baseline weeks holds at
-- least that share of them: only terms of such rows are summed.
with direct as not materialized (
    select
        term,
        week,
        papers
    from term_week_stats
    where
        week between $first and $last
        and (week = $week or list_contains($baseline, week))
        and term not in (select unnest(list_concat($acronyms::varchar[], $canonicals::varchar[])))
),

candidates as (
    select distinct term
    from direct
    where
        (week = $week and papers >= $min_support)
        or (
            week <> $week
            and $n_baseline > 0
            and papers::bigint * len($baseline) * $n_week >= $min_support * $n_baseline
        )
),

week_rows as not materialized (
    select
        term,
        paper_id,
        first_seen_week as week
    from paper_terms
    where
        first_seen_week between $first and $last
        and (first_seen_week = $week or list_contains($baseline, first_seen_week))
        and term in (select unnest(list_concat($acronyms::varchar[], $canonicals::varchar[])))
),

aliased as not materialized (
    select
        coalesce(($canonicals::varchar[])[list_position($acronyms::varchar[], term)], term)
            as term,
        paper_id,
        week
    from week_rows
),

totals as (
    select
        d.term,
        coalesce(sum(d.papers) filter (where d.week = $week), 0)::bigint as papers_week,
        coalesce(sum(d.papers) filter (where d.week <> $week), 0)::bigint
            as papers_baseline
    from direct as d
    semi join candidates as c on d.term = c.term
    group by d.term
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
        d.papers::bigint as papers
    from direct as d
    semi join supported as s on d.term = s.term
    where d.week <> $week
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
from baseline;
