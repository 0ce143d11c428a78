-- The rows of sql/queries/term_acronyms.sql (same parameters), read from the per-week cache
-- term_week_stats (one row per week and term) instead of paper_terms.
select distinct term
from term_week_stats
where
    week between $first and $last
    and list_contains($weeks, week)
    -- two cheap tests the pattern implies (no space, a capital) spare it most terms
    and not contains(term, ' ')
    and lower(term) <> term
    and regexp_full_match(term, '[A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*')
order by term;
