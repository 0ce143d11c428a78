-- The first row of `papers` without a signature (papers are only appended, so the ones
-- without are nearly all after it; paperwatch.db.duplicates).
select min(p.rowid) from papers p anti join paper_minhash m using (paper_id)
