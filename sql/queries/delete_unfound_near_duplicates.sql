-- Drop the pairs of $method that `found` (paper_id, duplicate_of: the caller's Arrow
-- table of every pair the current settings find) does not hold (paperwatch.db.duplicates).
delete from near_duplicates d
where d.method = $method and not exists (
    select 1 from found f
    where f.paper_id = d.paper_id and f.duplicate_of = d.duplicate_of
)
