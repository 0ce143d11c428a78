-- The rows of sql/queries/term_examples.sql (same parameters) for terms no alias touches that
-- have at least $per_term papers using them twice or more in $week: the papers that use a
-- term most are then all in term_week_repeats. A term with fewer gets fewer rows here, and
-- the caller (paperwatch.db.trends) asks term_examples.sql instead.
with ranked as (
    select
        term,
        paper_id,
        row_number() over (partition by term order by n desc, paper_id) as example_rank
    from term_week_repeats
    where
        week = $week
        and term in (select unnest($terms::varchar[]))
        and term not in (select unnest(list_concat($acronyms::varchar[], $canonicals::varchar[])))
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
