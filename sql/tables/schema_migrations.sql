-- Which numbered migrations of sql/migrations/ have been applied to this database.
create table if not exists schema_migrations (
    version integer primary key,
    name varchar not null,
    applied_at timestamptz not null default current_timestamp
);
