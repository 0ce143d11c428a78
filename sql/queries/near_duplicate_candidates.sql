-- Candidate near-duplicate pairs of the pending papers (paper_lsh_pending) in bands
-- $first..$last: every unordered pair of distinct papers sharing a (band, band_key) of
-- which one is pending, against every stored band key (pending papers included).
-- In a bucket of more than $anchors papers a pending paper is paired with the bucket's
-- $anchors smallest paper ids only, and the bucket's $anchors smallest pending ones with
-- every member (paperwatch.analysis.duplicates.BUCKET_ANCHORS). Only buckets with two members or more
-- are ranked: nearly every bucket holds one paper and gives no pair.
-- When most papers are pending (a backfill) paperwatch.db.duplicates._candidates leaves out
-- the line marked "touched": every shared bucket is then ranked, which costs less than
-- finding the buckets the pending papers touch (a join of every band key's paper id).
with new_bands as (
    select b.band, b.band_key, b.paper_id
    from paper_lsh_bands b semi join paper_lsh_pending using (paper_id)
    where b.band between $first and $last
),
touched as (select distinct band, band_key from new_bands),
shared as (
    select e.band, e.band_key
    from paper_lsh_bands e
    semi join touched using (band, band_key)  -- touched
    where e.band between $first and $last
    group by e.band, e.band_key having count(*) > 1
),
ranked as (
    select e.band, e.band_key, e.paper_id,
        row_number() over (partition by e.band, e.band_key order by e.paper_id) as r
    from paper_lsh_bands e semi join shared using (band, band_key)
    where e.band between $first and $last
),
new_ranked as (
    select * from ranked semi join paper_lsh_pending using (paper_id)
),
pairs as (
    select n.paper_id as x, a.paper_id as y
    from new_ranked n join ranked a on a.band = n.band and a.band_key = n.band_key
    where a.r <= $anchors
    union all
    select n.paper_id as x, m.paper_id as y
    from new_ranked n join ranked m on m.band = n.band and m.band_key = n.band_key
    where n.r <= $anchors
)
select distinct least(x, y), greatest(x, y) from pairs where x <> y
