-- For each paper first seen in $week, its $limit most similar papers first seen in earlier
-- weeks: cosine of TF-IDF vectors over paper_terms, tf = 1 + ln(n), idf = ln(N / df)
-- (Manning, Raghavan & Schütze 2008, "Introduction to Information Retrieval", ch. 6.4,
-- the "ltc" weighting), N = papers with terms. Near-duplicate pairs are left out (they are
-- the same paper revised, shown as duplicates), and so are pairs under $min_similarity.
with doc_freq as (
    select term, count(*) as df
    from paper_terms
    group by term
    having count(*) > 1                    -- a term of one paper is shared with none
),
corpus as (
    select count(distinct paper_id)::double as n from paper_terms
),
weights as (
    select t.paper_id, t.term, t.first_seen_week as week,
        (1 + ln(t.n)) * ln((select n from corpus) / d.df) as w
    from paper_terms t
    join doc_freq d using (term)
),
norms as (
    -- over every term of the paper (a term of one paper counts in its length too)
    select t.paper_id,
        sqrt(sum(power((1 + ln(t.n)) * ln((select n from corpus) / coalesce(d.df, 1)), 2))) as norm
    from paper_terms t
    left join doc_freq d using (term)
    group by t.paper_id
),
new_weights as (
    select * from weights where week = $week
),
dots as (
    select a.paper_id, b.paper_id as related_id, sum(a.w * b.w) as dot
    from new_weights a
    join weights b on b.term = a.term and b.week < $week
    group by all
),
scored as (
    select d.paper_id, d.related_id, d.dot / (na.norm * nb.norm) as similarity
    from dots d
    join norms na on na.paper_id = d.paper_id
    join norms nb on nb.paper_id = d.related_id
    where na.norm > 0 and nb.norm > 0
),
kept as (
    select s.*
    from scored s
    where s.similarity >= $min_similarity
        and not exists (
            select 1 from near_duplicates n
            where (n.paper_id = s.paper_id and n.duplicate_of = s.related_id)
                or (n.paper_id = s.related_id and n.duplicate_of = s.paper_id)
        )
),
ranked as (
    select *, row_number() over (
        partition by paper_id order by similarity desc, related_id
    ) as rank
    from kept
)
select paper_id, related_id, rank::integer as rank, similarity
from ranked
where rank <= $limit
order by paper_id, rank
