-- The report's duplicates section for $week: one row per paper that was repeated
-- (kind 'exact') or nearly repeated (kind 'near') in that week, from the view
-- duplicates_by_week. occurrences lists every file and position the paper
-- appeared in (all weeks); for 'near' also the original's text and occurrences,
-- so the report can show the similarity and a word diff (paperwatch.analysis.duplicates.word_diff).
with week_relations as (
    select kind, paper_id, duplicate_of, string_agg(distinct method, ', ' order by method) as method,
        bool_or(is_revision) as is_revision, max(similarity) as similarity
    from duplicates_by_week
    where week = $week
    group by kind, paper_id, duplicate_of
),
week_papers as (
    select paper_id from week_relations
    union
    select duplicate_of from week_relations where duplicate_of is not null
),
occurrences as (
    select
        o.paper_id,
        list(
            {'file_id': f.file_id, 'file': f.name, 'path': f.path, 'position': o.position, 'line': o.line,
             'venue': f.venue, 'year': f.year, 'sequence_number': f.sequence_number}
            order by f.first_seen, f.name, o.position
        ) as occurrences,
        min(f.first_seen) as first_seen
    from paper_occurrences o
    semi join week_papers using (paper_id)
    join listing_files f on f.file_id = o.file_id
    group by o.paper_id
)
select
    w.kind,
    w.paper_id,
    p.method_name,
    p.first_sentence,
    p.abstract,
    w.method,
    w.similarity,
    w.is_revision,
    po.occurrences,
    case when w.kind = 'near' then w.duplicate_of end as duplicate_of,
    case when w.kind = 'near' then q.method_name end as original_method_name,
    case when w.kind = 'near' then q.abstract end as original_abstract,
    case when w.kind = 'near' then qo.occurrences end as original_occurrences
from week_relations w
join papers p on p.paper_id = w.paper_id
left join occurrences po on po.paper_id = w.paper_id
left join papers q on q.paper_id = w.duplicate_of
left join occurrences qo on qo.paper_id = w.duplicate_of
order by w.kind, p.first_seen, w.paper_id, w.duplicate_of
