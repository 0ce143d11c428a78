-- MinHash signatures of the papers of `wanted` (an Arrow table of paper_id, the caller's
-- local variable; paperwatch.db.duplicates._plausible).
select paper_id, signature from paper_minhash semi join wanted using (paper_id)
