-- Papers of each ISO week of $weeks that use each term of $terms (canonical terms; an acronym
-- of $acronyms counts as its expansion in $canonicals), one row per (term, week) with
-- papers > 0: the small charts of the trending section.
with mapped as (
    select
        coalesce(($canonicals::varchar[])[list_position($acronyms::varchar[], term)], term)
            as term,
        paper_id,
        first_seen_week as week
    from paper_terms
    where
        first_seen_week between $first and $last
        and list_contains($weeks, first_seen_week)
        -- only rows that can map to one of $terms (the filter below still decides): a hash
        -- semi join on the few names, not a scan of the list for each of millions of rows
        and term in (select unnest(list_concat($terms::varchar[], $acronyms::varchar[])))
)

select
    term,
    week,
    count(distinct paper_id) as papers
from mapped
where list_contains($terms, term)
group by term, week
order by term, week;
