-- Papers whose signature and band keys are stored but that have not been compared with the
-- other papers yet. An ingestion run sketches each batch's new papers as it loads them and
-- compares all of them at its end in one pass (paperwatch.db.duplicates.update_near_duplicates),
-- which then empties this table in the same transaction that records the pairs. Rows left
-- here were left by a run killed between the two; the next run compares them.
create table if not exists paper_lsh_pending (
    paper_id varchar not null              -- papers.paper_id, with rows in paper_lsh_bands
);
