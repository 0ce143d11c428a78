-- Pairs of distinct papers whose abstracts are near-identical (exact Jaccard of
-- word/character shingles at or above Settings.dedup.threshold). Each pair once,
-- the older paper (earlier first_seen, ties by paper_id) as duplicate_of.
create table if not exists near_duplicates (
    paper_id varchar not null,             -- the newer paper
    duplicate_of varchar not null,         -- the older paper it nearly repeats
    similarity double not null,            -- exact Jaccard similarity, in [threshold, 1]
    method varchar not null,               -- how it was found, e.g. minhash-lsh
    detected_at timestamptz not null,      -- the run's clock when first recorded
    primary key (paper_id, duplicate_of)
);
