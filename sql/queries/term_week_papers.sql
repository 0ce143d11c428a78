-- The papers of the ISO week $week that use each term of $terms (canonical terms; an acronym
-- of $acronyms counts as its expansion in $canonicals), as a key of the set of their paper
-- ids: terms with the same key are shown as one row
-- (paperwatch.analysis.trend_stats.merge_same_papers).
--
-- The key is the set's size, and the XOR and the sum of the 64-bit hashes of its ids: a
-- fixed-size summary of a set of any size (a week of a million papers can give a common
-- term half a million ids, which as a list per term ran DuckDB out of memory). Two
-- different sets of the same size share both with a probability of about 2^-64 per pair.
with mapped as (
    select
        coalesce(($canonicals::varchar[])[list_position($acronyms::varchar[], term)], term)
            as term,
        paper_id
    from paper_terms
    where
        first_seen_week = $week
        -- only rows that can map to one of $terms (the filter below still decides): a hash
        -- semi join on the few names, not a scan of the list for each of millions of rows
        and term in (select unnest(list_concat($terms::varchar[], $acronyms::varchar[])))
),

pairs as (
    -- an acronym and its expansion in one paper are one paper of the canonical term
    select distinct term, paper_id
    from mapped
    where list_contains($terms, term)
)

select
    term,
    concat_ws(
        ':', count(*), bit_xor(hash(paper_id)), sum(hash(paper_id)::hugeint)
    ) as paper_set
from pairs
group by term
order by term;
