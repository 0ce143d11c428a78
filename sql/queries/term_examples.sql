-- Up to $per_term example papers of the ISO week $week for each term of $terms: the papers
-- that use the term most, then by paper_id, with their abstracts (the report quotes the
-- sentence that uses the term). An acronym of $acronyms counts as its expansion
-- in $canonicals (a paper with both is listed once).
with mapped as (
    select
        coalesce(($canonicals::varchar[])[list_position($acronyms::varchar[], t.term)], t.term)
            as term,
        t.paper_id,
        t.n
    from paper_terms as t
    where
        t.first_seen_week = $week
        -- only rows that can map to one of $terms (the filter below still decides): a hash
        -- semi join on the few names, not a scan of the list for each of millions of rows
        and t.term in (select unnest(list_concat($terms::varchar[], $acronyms::varchar[])))
),

per_paper as (
    select
        term,
        paper_id,
        sum(n) as n
    from mapped
    where list_contains($terms, term)
    group by term, paper_id
),

ranked as (
    select
        term,
        paper_id,
        row_number() over (partition by term order by n desc, paper_id) as example_rank
    from per_paper
)

select
    r.term,
    p.paper_id,
    p.method_name,
    p.first_sentence,
    p.abstract
from ranked as r
inner join papers as p on r.paper_id = p.paper_id
where r.example_rank <= $per_term and p.first_seen_week = $week
order by r.term, r.example_rank;
