-- Abstracts of papers first seen in the ISO weeks $weeks that may define one of the
-- acronyms $acronyms ("Large Language Models (LLMs)"): a parenthesised acronym, with or
-- without a plural s. At most $limit of them, by paper_id (the definitions of an acronym
-- agree; a sample is enough and bounds the work in a busy week).
-- Each parenthesised word is one row matched against $acronyms by a hash semi join (not a
-- search of the list of thousands of acronyms for each word), and only the papers kept read
-- their abstracts again.
with parenthesised as (
    select
        paper_id,
        regexp_replace(
            unnest(regexp_extract_all(abstract, '\(([A-Za-z0-9-]{2,12})\)', 1)),
            '([A-Z0-9])s$',
            '\1'
        ) as acronym
    from papers
    where
        first_seen_week between $first and $last
        and list_contains($weeks, first_seen_week)
),

defining as (
    select distinct paper_id
    from parenthesised
    where acronym in (select unnest($acronyms::varchar[]))
    order by paper_id
    limit $limit
)

select
    p.paper_id,
    p.abstract
from papers as p
semi join defining as d on p.paper_id = d.paper_id
order by p.paper_id;
