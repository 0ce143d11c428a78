-- Count the terms of the ISO week $week from paper_terms into term_week_stats: papers per
-- term and the two halves of the key of their set (sql/queries/term_week_papers.sql).
insert into term_week_stats (week, term, papers, paper_xor, paper_sum)
select
    $week as week,
    term,
    count(*)::integer as papers,
    bit_xor(hash(paper_id)) as paper_xor,
    case when count(*) > 1 then sum(hash(paper_id)::hugeint) end as paper_sum
from paper_terms
where first_seen_week = $week
group by term;
