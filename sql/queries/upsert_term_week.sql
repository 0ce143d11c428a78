-- Record that term_week_stats holds the ISO week $week as of its fingerprint $papers,
-- $extracted, $term_rows (sql/queries/term_weeks_stale.sql), computed at $at.
insert or replace into term_weeks (week, papers, extracted, term_rows, computed_at)
values ($week, $papers, $extracted, $term_rows, $at);
