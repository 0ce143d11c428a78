-- Papers per term per ISO week (the week a paper was first seen): document frequencies for
-- ad-hoc questions, e.g. `select * from weekly_term_counts where term = 'KV cache' order by week`.
create or replace view weekly_term_counts as
select
    first_seen_week as week,
    term,
    count(*) as papers
from paper_terms
group by first_seen_week, term;
