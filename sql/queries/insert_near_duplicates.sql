-- Store the verified pairs of `found` (paper_id, duplicate_of, similarity: the caller's
-- Arrow table); pairs already stored keep their row (paperwatch.db.duplicates).
insert into near_duplicates (paper_id, duplicate_of, similarity, method, detected_at)
select paper_id, duplicate_of, similarity, $method, $at from found
on conflict do nothing
