-- Papers per term per ISO week (the week a paper was first seen): document frequencies for
-- ad-hoc questions, e.g. `select * from weekly_term_counts where term = 'KV cache' order by week`.
create or replace view weekly_term_counts as
with week_terms as (
    select
        p.first_seen_week as week,
        t.term
    from paper_terms as t
    inner join papers as p on t.paper_id = p.paper_id
)

select
    week,
    term,
    count(*) as papers
from week_terms
group by week, term;
