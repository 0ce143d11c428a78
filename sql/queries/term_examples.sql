-- Up to $per_term example papers of the ISO week $week for each term of $terms: the papers
-- that use the term most, then by paper_id.
with ranked as (
    select
        t.term,
        p.paper_id,
        p.method_name,
        p.first_sentence,
        row_number() over (partition by t.term order by t.n desc, p.paper_id) as example_rank
    from paper_terms as t
    inner join papers as p on t.paper_id = p.paper_id
    where p.first_seen_week = $week and list_contains($terms, t.term)
)

select
    term,
    paper_id,
    method_name,
    first_sentence
from ranked
where example_rank <= $per_term
order by term, example_rank;
