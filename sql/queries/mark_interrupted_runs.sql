-- Runs still 'running' when a new run starts ended without finishing: the new run holds
-- the writer lock, so no other run can be going. Each is marked 'interrupted', with the
-- counts of what it did load (from the rows it wrote) instead of the zeros it started with.
update ingest_runs as r
set
    status = 'interrupted',
    finished_at = $now,
    error = 'the run ended before it finished (its process was killed or crashed); found by run '
        || $run_id || '; what it loaded is kept, and derived data was completed by that run',
    files_loaded = (
        select count(*) from listing_files as f where f.run_id = r.run_id and f.status = 'loaded'
    ),
    files_duplicate = (
        select count(*) from listing_files as f where f.run_id = r.run_id and f.status = 'duplicate'
    ),
    files_quarantined = (
        select count(*) from listing_files as f
        where f.run_id = r.run_id and f.status = 'quarantined'
    ),
    entries = (
        select coalesce(sum(f.entry_count), 0) from listing_files as f where f.run_id = r.run_id
    ),
    entries_loaded = (
        select coalesce(sum(f.entries_loaded), 0) from listing_files as f where f.run_id = r.run_id
    ),
    entries_quarantined = (
        select coalesce(sum(f.entries_quarantined), 0) from listing_files as f
        where f.run_id = r.run_id
    ),
    new_papers = (
        select count(*) from papers as p
        join listing_files as f on p.first_file_id = f.file_id
        where f.run_id = r.run_id
    )
where r.status = 'running' and r.run_id <> $run_id
returning r.run_id;
