-- trending_terms gets the columns of the per-term tests (see sql/tables/trending_terms.sql):
-- effect size, p-value, Benjamini-Hochberg q-value, the false discovery rate and the terms
-- merged with each row (same papers). Rows written before keep their Fightin' Words
-- delta_log_odds and score.
alter table trending_terms add column if not exists log2_ratio double;
alter table trending_terms add column if not exists p_value double;
alter table trending_terms add column if not exists q_value double;
alter table trending_terms add column if not exists fdr double;
alter table trending_terms add column if not exists same_papers varchar[];
