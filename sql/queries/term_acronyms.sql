-- Acronyms used bare (without their definition) by papers first seen in the ISO weeks
-- $weeks: terms of two or more capitals in one word, such as LLM or KV (a phrase such as
-- "KV cache" is not one). Candidates for paperwatch.analysis.terms.acronym_aliases.
select distinct term
from paper_terms
where
    first_seen_week between $first and $last
    and list_contains($weeks, first_seen_week)
    -- two cheap tests the pattern implies (no space, a capital) spare it most terms
    and not contains(term, ' ')
    and lower(term) <> term
    and regexp_full_match(term, '[A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*[A-Z][A-Za-z0-9-]*')
order by term;
