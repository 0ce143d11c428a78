-- (path, size, mtime) of the latest version recorded at each path, for the stat-first scan;
-- a file whose preparation failed under another paperwatch version ($version) is left out,
-- so the new version reads it again.
select path, size_bytes, mtime_ns
from listing_files
qualify row_number() over (partition by path order by first_seen desc, file_id desc) = 1
    and not (internal_error and paperwatch_version is distinct from $version)
