-- Papers first seen in $week that match a reader's topics ($topics: lowercase phrases;
-- $patterns: the same topics as RE2 patterns with word boundaries, in the same order).
-- A topic matches a paper when it is one of the paper's terms (paper_terms, any case) or
-- appears in its abstract; score = 2 per topic among its terms + 1 per occurrence in the text.
with week_papers as (
    select paper_id, lower(abstract) as text
    from papers
    where first_seen_week = $week
),
topics as (
    select unnest($topics) as topic, unnest($patterns) as pattern
),
term_hits as (
    select t.paper_id, lower(t.term) as topic
    from paper_terms t
    where t.first_seen_week = $week and lower(t.term) in (select topic from topics)
),
hits as (
    select
        p.paper_id,
        k.topic,
        (exists (select 1 from term_hits h where h.paper_id = p.paper_id and h.topic = k.topic))
            as in_terms,
        len(regexp_extract_all(p.text, k.pattern)) as in_text
    from week_papers p
    cross join topics k
)
select
    paper_id,
    list(topic order by topic) filter (where in_terms or in_text > 0) as topics,
    sum(2 * in_terms::integer + in_text)::integer as score
from hits
group by paper_id
having score > 0
order by score desc, paper_id
