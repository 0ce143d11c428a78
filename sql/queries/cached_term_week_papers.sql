-- The rows of sql/queries/term_week_papers.sql (same parameters, same keys): the key of a
-- term no alias touches is read from the per-week cache term_week_stats (its papers, XOR
-- and sum of hashes); that of an expansion of $canonicals is computed from paper_terms
-- there, since a paper with the expansion and its acronym counts once.
with alias_names as (
    select unnest(list_concat($acronyms::varchar[], $canonicals::varchar[])) as term
),

direct as (
    select
        term,
        concat_ws(':', papers, paper_xor, coalesce(paper_sum, paper_xor::hugeint)) as paper_set
    from term_week_stats
    where
        week = $week
        and term in (select unnest($terms::varchar[]))
        and term not in (select term from alias_names)
),

mapped as (
    select
        coalesce(($canonicals::varchar[])[list_position($acronyms::varchar[], term)], term)
            as term,
        paper_id
    from paper_terms
    where
        first_seen_week = $week
        and term in (select term from alias_names)
),

pairs as (
    select distinct term, paper_id
    from mapped
    where list_contains($terms, term)
)

select
    term,
    paper_set
from direct
union all
select
    term,
    concat_ws(
        ':', count(*), bit_xor(hash(paper_id)), sum(hash(paper_id)::hugeint)
    ) as paper_set
from pairs
group by term
order by term;
