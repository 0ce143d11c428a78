-- Every pending paper was compared (paperwatch.db.duplicates).
delete from paper_lsh_pending
