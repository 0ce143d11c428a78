-- The terms of the papers first seen in $week (paper_terms), for a reader's library and
-- exclusions (paperwatch.db.library). first_seen_week is in paper_terms so that only the
-- week's row groups are read.
select
    paper_id,
    term,
    n
from paper_terms
where first_seen_week = $week
