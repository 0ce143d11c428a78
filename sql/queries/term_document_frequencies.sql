-- Document frequencies of terms: papers_week among the papers first seen in the ISO week
-- $week, papers_baseline among those of the baseline weeks $baseline. $first and $last
-- bound all those weeks: a range DuckDB pushes into the scan, so that only their row groups
-- are read. Only terms that can pass the minimum support are returned (the others are
-- never shown, and a busy week has millions of them): at least $min_support papers this
-- week, or, with a baseline ($n_baseline > 0), a baseline rate that would give
-- $min_support of the $n_week papers of this week (paperwatch.terms.score_trending_terms).
select
    term,
    count(*) filter (where first_seen_week = $week) as papers_week,
    count(*) filter (where first_seen_week <> $week) as papers_baseline
from paper_terms
where
    first_seen_week between $first and $last
    and (first_seen_week = $week or list_contains($baseline, first_seen_week))
group by term
having
    papers_week >= $min_support
    or ($n_baseline > 0 and papers_baseline * $n_week >= $min_support * $n_baseline)
order by term;
