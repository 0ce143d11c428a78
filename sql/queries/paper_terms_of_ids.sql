-- The terms of the papers $ids (a list of paper_id).
select
    paper_id,
    term,
    n
from paper_terms
where list_contains($ids, paper_id)
