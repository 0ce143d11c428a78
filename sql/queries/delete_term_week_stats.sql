-- Forget the cached term counts of the ISO week $week before they are counted again
-- (paperwatch.db.term_weeks).
delete from term_week_stats where week = $week;
