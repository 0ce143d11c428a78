-- Per ISO week, the paper_terms rows of papers that use a term at least twice (a few per
-- cent of the rows): the report's example papers of a term are those that use it most, so
-- when a term has enough of them they are found here instead of in the week's millions of
-- paper_terms rows (paperwatch.db.trends). Counted with term_week_stats and valid under the
-- same term_weeks row (paperwatch.db.term_weeks).
create table if not exists term_week_repeats (
    week varchar not null,                 -- paper_terms.first_seen_week
    term varchar not null,
    paper_id varchar not null,
    n integer not null                     -- paper_terms.n, >= 2
);
