-- The latest version recorded at a path ($path): is the file unchanged, or to be read again?
-- retry: its preparation failed under another paperwatch version ($version).
select
    file_id,
    sha256,
    internal_error and paperwatch_version is distinct from $version as retry
from listing_files
where path = $path
order by first_seen desc, file_id desc
limit 1
