-- One row per duplicate relation, by the ISO week it arose (for ad-hoc SQL).
--   kind 'exact': an occurrence of a paper after its first one (same paper_id in
--     another entry, in the same or another file). method 'paper_id': the same text;
--     'external_id': an edited text under the same arXiv id, DOI or OpenReview id
--     (is_revision true; paper_occurrences.text_paper_id is the edited text's id). week = the ISO week the file
--     holding that occurrence was first seen. Entries carried over unchanged from the version of a
--     listing that their file supersedes (same path, changed bytes) are not counted.
--   kind 'near': a near_duplicates pair; week = the week the newer paper was first seen.
--     is_revision: the newer paper's file is a new version of a listing that held the
--     original (an entry edited in a re-issued listing).
-- paper_id/file/position: where the repeat is; duplicate_of/original_*: the first
-- occurrence of the paper it repeats (for 'exact' duplicate_of = paper_id).
create or replace view duplicates_by_week as
with first_occurrence as (
    select
        p.paper_id,
        p.method_name,
        p.first_seen,
        p.first_seen_week,
        f.file_id,
        f.name,
        f.path,
        p.first_position as position
    from papers p
    join listing_files f on f.file_id = p.first_file_id
),
exact as (
    select
        'exact' as kind,
        f.first_seen_week as week,
        o.paper_id,
        o.paper_id as duplicate_of,
        fo.method_name,
        fo.method_name as original_method_name,
        1.0::double as similarity,
        case when o.text_paper_id is not null then 'external_id' else 'paper_id' end as method,
        o.file_id,
        f.name as file_name,
        f.path as file_path,
        o.position,
        o.line,
        fo.file_id as original_file_id,
        fo.name as original_file_name,
        fo.path as original_file_path,
        fo.position as original_position,
        o.text_paper_id is not null as is_revision,
        f.first_seen as detected_at
    from paper_occurrences o
    join listing_files f on f.file_id = o.file_id
    join first_occurrence fo on fo.paper_id = o.paper_id
    where (o.file_id, o.position) <> (fo.file_id, fo.position)
        and not exists (
            select 1
            from paper_occurrences previous
            where previous.file_id = f.supersedes and previous.paper_id = o.paper_id
        )
),
near as (
    select
        'near' as kind,
        newer.first_seen_week as week,
        d.paper_id,
        d.duplicate_of,
        newer.method_name,
        older.method_name as original_method_name,
        d.similarity,
        d.method,
        newer.file_id,
        newer.name as file_name,
        newer.path as file_path,
        newer.position,
        o.line,
        older.file_id as original_file_id,
        older.name as original_file_name,
        older.path as original_file_path,
        older.position as original_position,
        exists (
            select 1
            from listing_files nf
            join paper_occurrences previous on previous.file_id = nf.supersedes
            where nf.file_id = newer.file_id and previous.paper_id = d.duplicate_of
        ) as is_revision,
        d.detected_at
    from near_duplicates d
    join first_occurrence newer on newer.paper_id = d.paper_id
    join first_occurrence older on older.paper_id = d.duplicate_of
    left join paper_occurrences o on o.file_id = newer.file_id and o.position = newer.position
)
select * from exact
union all by name
select * from near;
