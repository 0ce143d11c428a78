-- Validation results of one ingestion run ($run_id), one row per suite and expectation.
select
    suite,
    expectation,
    severity,
    count(*) as batches,
    count(*) filter (where outcome = 'passed') as passed,
    count(*) filter (where outcome = 'failed') as failed,
    count(*) filter (where outcome = 'error') as broken,
    sum(unexpected_count) as unexpected
from validation_results
where run_id = $run_id
group by suite, expectation, severity
order by suite, expectation
