-- Forget the cached acronym definitions of the ISO week $week before they are read again
-- (paperwatch.db.term_weeks).
delete from term_week_definitions where week = $week;
