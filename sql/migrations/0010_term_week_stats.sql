-- The per-week cache of term document frequencies: term_week_stats and term_weeks (created
-- by sql/tables/term_week_stats.sql and term_weeks.sql before the migrations run). Nothing
-- to copy: a week missing from term_weeks is counted from paper_terms when first needed.
-- Recorded so that a read-only connection knows the cache tables exist.
select count(*) from term_weeks;
