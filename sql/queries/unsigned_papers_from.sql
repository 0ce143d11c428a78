-- Papers from row $first on without a signature, with their abstracts
-- (paperwatch.db.duplicates).
select p.paper_id, p.abstract, p.first_seen
from papers p
anti join paper_minhash m using (paper_id)
where p.rowid >= $first
order by p.paper_id
