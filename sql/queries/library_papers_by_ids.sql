-- Papers of the database whose external id is one of $ids (arXiv:…, doi:…): the items of
-- a reader's id-list library. year: the listing's year, else that of first_seen.
select
    external_id,
    paper_id,
    coalesce(title, method_name) as title,
    coalesce(year, year(first_seen))::integer as year
from papers
where list_contains($ids, external_id)
order by external_id, first_seen, paper_id
