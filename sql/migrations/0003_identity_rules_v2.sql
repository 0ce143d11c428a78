-- Identity rules v2 (paperwatch.clean): a leading list number ("1.", "[3]") is no longer
-- part of the abstract and is kept as paper_occurrences.listed_number; typographic
-- quotes, apostrophes and dashes are folded before paper_id; PDF ligature damage
-- ("di®erent") is repaired. The Python step named below recomputes paper_id and the
-- clean fields of the stored entries those rules change, merges papers that became one,
-- and drops their derived rows (signatures, LSH bands, near-duplicate pairs, terms),
-- which the next ingestion run computes again: the database then equals one built
-- from scratch with the new rules.
alter table paper_occurrences add column if not exists listed_number integer;
-- python: paperwatch.rekey.rekey_papers
