-- The per-week cache of term document frequencies: term_week_stats, term_week_definitions,
-- term_week_repeats and term_weeks (created by sql/tables/ before the migrations run). Nothing
-- to copy: a week missing from term_weeks is counted from paper_terms when first needed.
-- Recorded so that a read-only connection knows the cache tables exist.
select count(*) from term_weeks;
