-- Count the terms of the ISO week $week from paper_terms into term_week_stats: papers per
-- term and the two halves of the key of their set (sql/queries/term_week_papers.sql).
-- acronym: the test of sql/queries/term_acronyms.sql, made once here.
insert into term_week_stats (week, term, papers, paper_xor, paper_sum, acronym)
select
    week,
    term,
    papers,
    paper_xor,
    paper_sum,
    coalesce(
        not contains(term, ' ')
        and lower(term) <> term
        and regexp_full_match(term, '[A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*'),
        false
    ) as acronym
from (
    select
        $week as week,
        term,
        count(*)::integer as papers,
        bit_xor(hash(paper_id)) as paper_xor,
        case when count(*) > 1 then sum(hash(paper_id)::hugeint) end as paper_sum
    from paper_terms
    where first_seen_week = $week
    group by term
);
