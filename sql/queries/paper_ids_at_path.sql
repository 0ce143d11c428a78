-- The papers of every version recorded at one listing path ($path): what a new version
-- of that listing carries over (not counted as exact duplicates).
select distinct o.paper_id
from paper_occurrences as o
inner join listing_files as f using (file_id)
where f.path = $path
