-- Papers of `wanted` (an Arrow table of paper_id, the caller's local variable, read by
-- DuckDB's replacement scan) without a signature (paperwatch.db.duplicates).
select p.paper_id, p.first_seen
from papers p semi join wanted using (paper_id)
where p.paper_id not in (
    select paper_id from paper_minhash semi join wanted using (paper_id)
)
order by p.paper_id
