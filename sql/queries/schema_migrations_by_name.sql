-- Rows of a schema_migrations table of the earlier layout (version primary key, name),
-- keyed by the migration's name without its number; a migration recorded twice under two
-- numbers (renumbered at a merge, then applied again) is one row, its first.
select
    substr(name, strpos(name, '_') + 1) as migration,
    min(version) as version,
    arg_min(name, version) as name,
    null::varchar as checksum,
    min(applied_at) as applied_at
from _old_schema_migrations
group by 1
order by 2
