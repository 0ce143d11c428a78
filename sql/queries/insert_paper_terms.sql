-- Store extracted terms from the registered frames _pw_terms and _pw_counts
-- (paperwatch.db.trends).
insert into paper_terms (paper_id, term, n, first_seen_week)
select paper_id, term, n, first_seen_week from _pw_terms;
insert into paper_terms_extracted (paper_id, extractor_version, terms, extracted_at)
select paper_id, extractor_version, terms, extracted_at from _pw_counts
