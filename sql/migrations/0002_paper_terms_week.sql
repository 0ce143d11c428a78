-- paper_terms.first_seen_week (see sql/tables/paper_terms.sql), filled from papers.
alter table paper_terms add column if not exists first_seen_week varchar;
update paper_terms as t
set first_seen_week = p.first_seen_week
from papers as p
where p.paper_id = t.paper_id and t.first_seen_week is null;
