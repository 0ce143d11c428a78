-- Store a week's trending terms from the registered frame _pw_trending
-- (paperwatch.db.trends.store_trending_terms: the columns of TRENDING_SCHEMA and the run's).
insert into trending_terms (
    week, term, direction, rank, papers_week, papers_baseline, rate_week, rate_baseline,
    log2_ratio, p_value, q_value, new_this_week, same_papers, baseline_weeks, min_support,
    fdr, computed_at
)
select
    week, term, direction, rank, papers_week, papers_baseline, rate_week, rate_baseline,
    log2_ratio, p_value, q_value, new_this_week, same_papers, baseline_weeks, min_support,
    fdr, computed_at
from _pw_trending
