-- Abstract and first_seen of the papers of `wanted` (an Arrow table of paper_id, the
-- caller's local variable; paperwatch.db.duplicates).
select paper_id, abstract, first_seen from papers semi join wanted using (paper_id)
