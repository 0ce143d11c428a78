-- Per ISO week, the document frequency of each term and a key of the set of its papers: a
-- cache of what the trending section reads from paper_terms (paperwatch.db.term_weeks), one
-- row per (week, term) with papers > 0, valid while the week's row of term_weeks matches
-- the week as it is. The report counts from here instead of aggregating the week's
-- millions of paper_terms rows again; nothing else reads it.
create table if not exists term_week_stats (
    week varchar not null,                 -- paper_terms.first_seen_week
    term varchar not null,                 -- paper_terms.term (aliases are not applied)
    papers integer not null,               -- paper_terms rows of (week, term): papers
    paper_xor ubigint not null,            -- bit_xor of DuckDB's hash(paper_id) over them
    paper_sum hugeint,                     -- sum of those hashes; null when papers = 1 (then
                                           -- equal to paper_xor)
    acronym boolean not null               -- the term is an acronym as term_acronyms.sql has it
);
