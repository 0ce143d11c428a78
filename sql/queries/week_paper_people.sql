-- Titles and parsed authors of the papers first seen in $week (null or empty where the
-- listing's format has none), for a reader's followed authors and exclusions.
select
    paper_id,
    title,
    coalesce(authors, []::varchar []) as authors
from papers
where first_seen_week = $week
