-- Store a week's related papers from the registered frame _related_rows
-- (paperwatch.db.related.store_related_papers).
insert into related_papers (week, paper_id, related_id, rank, similarity, computed_at)
select $week, paper_id, related_id, rank, similarity, $at
from _related_rows
