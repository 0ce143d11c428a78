-- Forget every signature, band key and pending paper: all papers are sketched again
-- (paperwatch.db.duplicates, when the signature scheme changed).
delete from paper_lsh_bands;
delete from paper_minhash;
delete from paper_lsh_pending
