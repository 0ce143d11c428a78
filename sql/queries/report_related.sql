-- Related earlier papers of the new papers of $week, as stored in related_papers, with
-- what the report shows of them.
select
    r.paper_id,
    r.related_id,
    r.rank,
    r.similarity,
    q.method_name,
    q.first_sentence,
    q.first_seen_week as week
from related_papers r
join papers q on q.paper_id = r.related_id
where r.week = $week
order by r.paper_id, r.rank
