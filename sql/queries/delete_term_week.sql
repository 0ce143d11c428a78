-- Forget that the ISO week $week is cached (it has no papers any more).
delete from term_weeks where week = $week;
