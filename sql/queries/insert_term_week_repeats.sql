-- The paper_terms rows of the ISO week $week with a term used at least twice into
-- term_week_repeats (paperwatch.db.term_weeks).
insert into term_week_repeats (week, term, paper_id, n)
select
    first_seen_week as week,
    term,
    paper_id,
    n
from paper_terms
where first_seen_week = $week and n >= 2;
