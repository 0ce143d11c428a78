-- Document frequency of each term among the papers first seen in the ISO weeks $weeks.
select
    t.term,
    count(*) as papers
from paper_terms as t
inner join papers as p on t.paper_id = p.paper_id
where list_contains($weeks, p.first_seen_week)
group by t.term
order by t.term;
