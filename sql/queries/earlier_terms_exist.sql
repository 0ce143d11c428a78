-- Whether any paper first seen before $week has terms: without one,
-- related_papers_of_week.sql finds no candidate and returns no row, so it is not run.
select exists (select 1 from paper_terms where first_seen_week < $week) as found
