-- The parenthesised words of the abstracts of the ISO week $week into term_week_definitions,
-- extracted as sql/queries/term_acronym_definitions.sql does (one row per paper and word).
insert into term_week_definitions (week, paper_id, acronym)
select distinct
    $week as week,
    paper_id,
    acronym
from (
    select
        paper_id,
        regexp_replace(
            unnest(regexp_extract_all(abstract, '\(([A-Za-z0-9-]{2,12})\)', 1)),
            '([A-Z0-9])s$',
            '\1'
        ) as acronym
    from papers
    where first_seen_week = $week
);
