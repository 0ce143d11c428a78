-- Up to $per_term example papers of the ISO week $week for each term of $terms: the papers
-- that use the term most, then by paper_id.
with ranked as (
    select
        t.term,
        t.paper_id,
        row_number() over (partition by t.term order by t.n desc, t.paper_id) as example_rank
    from paper_terms as t
    where t.first_seen_week = $week and list_contains($terms, t.term)
)

select
    r.term,
    p.paper_id,
    p.method_name,
    p.first_sentence
from ranked as r
inner join papers as p on r.paper_id = p.paper_id
where r.example_rank <= $per_term and p.first_seen_week = $week
order by r.term, r.example_rank;
