-- Re-issued listings: a file at the same path whose bytes changed supersedes the
-- earlier version. One row per new version, with what changed between the two:
-- unchanged papers, added papers (revised_paper_ids: those that are near-duplicates
-- of a removed one, i.e. edited entries), and removed papers.
create or replace view listing_revisions as
with versions as (
    select file_id, supersedes as previous_file_id, path, name, first_seen_week as week, first_seen
    from listing_files
    where supersedes is not null and status = 'loaded'
),
old_papers as (
    select distinct v.file_id, o.paper_id
    from versions v
    join paper_occurrences o on o.file_id = v.previous_file_id
),
new_papers as (
    select distinct v.file_id, o.paper_id
    from versions v
    join paper_occurrences o on o.file_id = v.file_id
),
removed as (
    select file_id, paper_id from old_papers
    except
    select file_id, paper_id from new_papers
),
added as (
    select file_id, paper_id from new_papers
    except
    select file_id, paper_id from old_papers
),
revised as (
    select a.file_id, a.paper_id, n.duplicate_of as previous_paper_id
    from added a
    join near_duplicates n on n.paper_id = a.paper_id
    join removed r on r.file_id = a.file_id and r.paper_id = n.duplicate_of
)
select
    v.week,
    v.file_id,
    v.previous_file_id,
    v.path,
    v.name,
    v.first_seen,
    (select count(*) from new_papers n where n.file_id = v.file_id) - (select count(*) from added a where a.file_id = v.file_id) as unchanged,
    coalesce((select list(a.paper_id order by a.paper_id) from added a where a.file_id = v.file_id), []) as added_paper_ids,
    coalesce((select list(x.paper_id order by x.paper_id) from revised x where x.file_id = v.file_id), []) as revised_paper_ids,
    coalesce(
        (
            select list(r.paper_id order by r.paper_id) from removed r
            where r.file_id = v.file_id
              and r.paper_id not in (select previous_paper_id from revised x where x.file_id = v.file_id)
        ),
        []
    ) as removed_paper_ids
from versions v;
