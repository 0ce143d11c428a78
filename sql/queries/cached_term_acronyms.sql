-- The rows of sql/queries/term_acronyms.sql (same parameters), read from the per-week cache
-- term_week_stats (one row per week and term, its acronym test made when it was counted)
-- instead of paper_terms.
select distinct term
from term_week_stats
where
    week between $first and $last
    and list_contains($weeks, week)
    and acronym                            -- the test of term_acronyms.sql, made at refresh
order by term;
