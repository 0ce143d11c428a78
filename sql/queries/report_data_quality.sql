-- The data-quality section of the report of $week: checks per suite, and every
-- failed or broken check with the file it concerns.
with week_checks as (
    select v.*, f.name as file
    from validation_results v
    join ingest_runs r using (run_id)
    left join listing_files f using (file_id)
    where r.week = $week
)
select
    suite,
    count(*) filter (where outcome = 'passed') as passed,
    count(*) filter (where outcome = 'failed' and severity = 'critical') as failed_critical,
    count(*) filter (where outcome = 'failed' and severity = 'warning') as failed_warning,
    count(*) filter (where outcome = 'error') as broken,
    coalesce(
        list(
            {'file': file, 'expectation': expectation, 'severity': severity, 'outcome': outcome, 'reason': reason,
             'unexpected_count': unexpected_count, 'examples': unexpected_examples, 'details': details}
            order by file, expectation
        ) filter (where outcome <> 'passed'),
        []
    ) as problems
from week_checks
group by suite
order by suite
