-- Forget the terms of the papers of the registered frame _pw_ids before they are extracted
-- again (paperwatch.db.trends).
delete from paper_terms where paper_id in (select paper_id from _pw_ids);
delete from paper_terms_extracted where paper_id in (select paper_id from _pw_ids)
