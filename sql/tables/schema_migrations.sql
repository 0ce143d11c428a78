-- Which migrations of sql/migrations/ have been applied to this database, by name: a
-- migration renumbered at a merge is still the same migration, and two with one number
-- are two (paperwatch.db.apply_schema).
create table if not exists schema_migrations (
    migration varchar primary key,         -- the file's name without its number: listing_formats
    version integer not null,              -- the number it had when applied
    name varchar not null,                 -- the file's name when applied: 0005_listing_formats
    checksum varchar,                      -- sha256 of the file's text; null when recorded by
                                           -- a build that kept no checksum
    applied_at timestamptz not null default current_timestamp
);
