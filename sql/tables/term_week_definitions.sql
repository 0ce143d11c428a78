-- Per ISO week, the parenthesised words of each paper's abstract that may define an acronym
-- ("Large Language Models (LLMs)" gives LLM): a cache of what
-- sql/queries/term_acronym_definitions.sql extracts from papers, counted with the week's
-- term_week_stats (paperwatch.db.term_weeks) and valid under the same term_weeks row.
create table if not exists term_week_definitions (
    week varchar not null,                 -- papers.first_seen_week
    paper_id varchar not null,
    acronym varchar not null               -- the word, a plural s after a capital or digit removed
);
