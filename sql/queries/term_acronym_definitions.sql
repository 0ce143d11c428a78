-- Abstracts of papers first seen in the ISO weeks $weeks that may define one of the
-- acronyms $acronyms ("Large Language Models (LLMs)"): a parenthesised acronym, with or
-- without a plural s. At most $limit of them, by paper_id (the definitions of an acronym
-- agree; a sample is enough and bounds the work in a busy week).
select
    paper_id,
    abstract
from papers
where
    first_seen_week between $first and $last
    and list_contains($weeks, first_seen_week)
    and list_has_any(
        list_transform(
            regexp_extract_all(abstract, '\(([A-Za-z0-9-]{2,12})\)', 1),
            lambda x: regexp_replace(x, '([A-Z0-9])s$', '\1')
        ),
        $acronyms::varchar[]
    )
order by paper_id
limit $limit;
