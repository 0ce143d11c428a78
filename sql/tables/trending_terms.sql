-- The trending terms of each reported week, as computed by
-- paperwatch.db.trends.trending_terms_for_week (which replaces the week's rows each time).
-- direction: 'new' / 'rising' / 'falling' (a beta-binomial test of the week's papers with the
-- term against the baseline weeks, Benjamini-Hochberg at the false discovery rate fdr; see
-- docs/terms.md), or 'distinctive' (a week without a baseline: terms frequent this week and
-- rare in general English, not trends; p_value and q_value null).
create table if not exists trending_terms (
    week varchar not null,                 -- ISO week, e.g. 2026-W48
    term varchar not null,
    direction varchar not null,            -- new | rising | falling | distinctive
    rank integer not null,                 -- 1-based within (week, direction)
    papers_week integer not null,          -- papers of the week with the term
    papers_baseline integer,               -- papers of the baseline weeks with it (null: distinctive)
    rate_week double not null,             -- papers_week / papers of the week
    rate_baseline double,                  -- papers_baseline / papers of the baseline
    delta_log_odds double,                 -- rows before migration 0007 (Fightin' Words); null now
    score double,                          -- rows before migration 0007 (its z-score); null now
    new_this_week boolean not null,        -- no baseline paper has the term
    baseline_weeks varchar[] not null,     -- the ISO weeks of the baseline
    min_support integer not null,
    computed_at timestamptz not null,
    log2_ratio double,                     -- effect size: log2(share now / share before), ½-paper smoothed
    p_value double,                        -- two-sided p of the term's test
    q_value double,                        -- Benjamini-Hochberg adjusted p over the terms tested
    fdr double,                            -- the false discovery rate used
    same_papers varchar[],                 -- other terms in exactly the same papers this week (shown as one)
    primary key (week, direction, term)
);
