-- The papers of the ISO week $week that use each term of $terms (canonical terms; an acronym
-- of $acronyms counts as its expansion in $canonicals), as a sorted list of paper ids: terms
-- with the same list are shown as one row (paperwatch.trend_stats.merge_same_papers).
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
)

select
    term,
    list(distinct paper_id order by paper_id) as paper_ids
from mapped
where list_contains($terms, term)
group by term
order by term;
