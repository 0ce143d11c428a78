-- Signatures made with another scheme than $scheme (paperwatch.db.duplicates).
select count(*) from paper_minhash where scheme <> $scheme
