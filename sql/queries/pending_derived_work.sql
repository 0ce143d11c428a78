-- Papers still missing what the ingestion run derives from them: a MinHash signature
-- (near-duplicates), a comparison with the other papers (sketched, still in
-- paper_lsh_pending) or a terms extraction. All are 0 after a run that finished; a run
-- that was killed half-way, or a migration that re-keyed papers, leaves some behind.
select
    (select count(*) from papers anti join paper_minhash using (paper_id)) as unsketched,
    (select count(*) from paper_lsh_pending) as uncompared,
    (select count(*) from papers anti join paper_terms_extracted using (paper_id)) as unextracted;
