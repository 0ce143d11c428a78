-- Papers pending comparison, and papers with a signature (paperwatch.db.duplicates).
select (select count(*) from paper_lsh_pending), (select count(*) from paper_minhash)
