-- For each paper first seen in $week, its $limit most similar papers first seen in earlier
-- weeks: cosine of TF-IDF vectors over paper_terms, tf = 1 + ln(n), idf = ln(N / df)
-- (Manning, Raghavan & Schütze 2008, "Introduction to Information Retrieval", ch. 6.4, the
-- "ltc" weighting), N = papers with at least one term.
-- Candidates as Lucene's MoreLikeThis finds them: each new paper queries with its
-- $query_terms highest-weighted terms, and the $candidates earlier papers scoring highest
-- on those are kept; their cosine is then computed exactly on the whole vectors. So
-- every similarity is exact, and a pair that shares none of the new paper's strongest
-- terms is not considered (bench/related.py: what this saves at 100,000 papers).
-- Near-duplicate pairs are left out (they are the same paper revised, shown as
-- duplicates), and so are pairs under $min_similarity.
with corpus as (
    select count(*)::double as n from paper_terms_extracted where terms > 0
),
new_terms as (
    select paper_id, term, n from paper_terms where first_seen_week = $week
),
new_df as (
    select term, count(*) as df
    from paper_terms
    where term in (select term from new_terms)
    group by term
),
new_weights as (
    select t.paper_id, t.term, (1 + ln(t.n)) * ln((select n from corpus) / d.df) as w, d.df
    from new_terms t
    join new_df d using (term)
),
query_terms as (
    select paper_id, term, w
    from new_weights
    where df > 1                           -- a term of one paper is shared with none
    qualify row_number() over (partition by paper_id order by w desc, term) <= $query_terms
),
scored_candidates as (
    select q.paper_id, e.paper_id as related_id,
        sum(q.w * (1 + ln(e.n)) * ln((select n from corpus) / d.df)) as score
    from query_terms q
    join new_df d using (term)
    join paper_terms e on e.term = q.term and e.first_seen_week < $week
    group by all
),
candidates as (
    select paper_id, related_id
    from scored_candidates
    qualify row_number() over (partition by paper_id order by score desc, related_id) <= $candidates
),
candidate_terms as (
    select e.paper_id, e.term, e.n
    from paper_terms e
    where e.paper_id in (select related_id from candidates)
),
candidate_df as (
    select term, count(*) as df
    from paper_terms
    where term in (select term from candidate_terms)
    group by term
),
candidate_weights as (
    select t.paper_id, t.term, (1 + ln(t.n)) * ln((select n from corpus) / d.df) as w
    from candidate_terms t
    join candidate_df d using (term)
),
norms as (
    select paper_id, sqrt(sum(w * w)) as norm from new_weights group by paper_id
    union all
    select paper_id, sqrt(sum(w * w)) as norm from candidate_weights group by paper_id
),
dots as (
    select c.paper_id, c.related_id, sum(a.w * b.w) as dot
    from candidates c
    join new_weights a on a.paper_id = c.paper_id
    join candidate_weights b on b.paper_id = c.related_id and b.term = a.term
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
