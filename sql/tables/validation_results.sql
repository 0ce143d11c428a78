-- One row per expectation per validated batch.
create table if not exists validation_results (
    run_id varchar not null,
    file_id integer,                       -- null when the batch spans several files
    suite varchar not null,
    expectation varchar not null,          -- expectation type and column, e.g. expect_column_values_to_not_be_null(abstract)
    severity varchar not null,             -- critical | warning
    reason varchar,                        -- the plain-language reason (suite meta.reason)
    outcome varchar not null,              -- passed | failed | error (the check itself broke)
    success boolean not null,
    element_count integer,
    unexpected_count integer,
    unexpected_examples varchar[],
    details varchar,
    validated_at timestamptz not null
);
