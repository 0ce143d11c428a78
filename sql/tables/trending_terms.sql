-- The trending terms of each reported week, as computed by
-- paperwatch.trending.trending_terms_for_week (which replaces the week's rows each time).
-- direction: 'rising' / 'falling' (log-odds ratio with an informative Dirichlet prior against
-- the baseline weeks; score is the z-score), or 'frequent' (a week without a baseline: the
-- most frequent terms, score null, not trends).
create table if not exists trending_terms (
    week varchar not null,                 -- ISO week, e.g. 2026-W48
    term varchar not null,
    direction varchar not null,            -- rising | falling | frequent
    rank integer not null,                 -- 1-based within (week, direction)
    papers_week integer not null,          -- papers of the week with the term
    papers_baseline integer,               -- papers of the baseline weeks with it (null: frequent)
    rate_week double not null,             -- papers_week / papers of the week
    rate_baseline double,                  -- papers_baseline / papers of the baseline
    delta_log_odds double,
    score double,                          -- z-score (null for 'frequent')
    new_this_week boolean not null,        -- no baseline paper has the term
    baseline_weeks varchar[] not null,     -- the ISO weeks of the baseline
    min_support integer not null,
    computed_at timestamptz not null,
    primary key (week, direction, term)
);
