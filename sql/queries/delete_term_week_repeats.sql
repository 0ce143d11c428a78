-- Forget the cached repeated terms of the ISO week $week before they are read again
-- (paperwatch.db.term_weeks).
delete from term_week_repeats where week = $week;
