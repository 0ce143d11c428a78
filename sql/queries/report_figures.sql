-- The week's figures for the report header. $week is an ISO week such as 2026-W48.
with week_files as (
    -- a file moved to another path is not a new listing of the week
    select * from listing_files where first_seen_week = $week and status <> 'moved'
),
week_checks as (
    select v.*
    from validation_results v
    join ingest_runs r using (run_id)
    where r.week = $week
)
select
    (select count(*) from week_files) as files,
    (select count(*) from week_files where status = 'loaded') as files_loaded,
    (select count(*) from week_files where status = 'duplicate') as files_duplicate,
    (select count(*) from week_files where status = 'quarantined') as files_quarantined,
    (select coalesce(sum(entry_count), 0) from week_files where status = 'loaded') as entries,
    (select count(*) from papers where first_seen_week = $week) as new_papers,
    (
        select count(*) from duplicates_by_week where week = $week and kind = 'exact'
    ) as exact_duplicates,
    (
        select count(*) from duplicates_by_week where week = $week and kind = 'near'
    ) as near_duplicates,
    (select count(*) from quarantine where week = $week and kind = 'entry') as entries_quarantined,
    (select count(*) from week_checks where outcome = 'passed') as checks_passed,
    (select count(*) from week_checks) as checks_total,
    (
        select coalesce(list(distinct venue || ' ' || year order by venue || ' ' || year), [])
        from week_files where venue is not null
    ) as venues
