-- Up to three earlier papers related to each new paper of a week, by TF-IDF cosine over
-- paper_terms (paperwatch/related.py; query sql/queries/related_papers_of_week.sql).
-- Written by each report run of the week (its rows replaced whole), so (paper_id,
-- related_id) is unique. Near-duplicate pairs (near_duplicates) are never related papers.
create table if not exists related_papers (
    week varchar not null,                 -- ISO week of paper_id (its first_seen_week)
    paper_id varchar not null,             -- the new paper
    related_id varchar not null,           -- an earlier paper (first seen in an earlier week)
    rank integer not null,                 -- 1 = most similar
    similarity double not null,            -- TF-IDF cosine, in (0, 1]
    computed_at timestamptz not null       -- the report run's clock
);
