-- Papers whose terms were never extracted, or were extracted by an older version of the
-- rules; restricted to $paper_ids unless it is null.
select
    p.paper_id,
    p.abstract,
    p.first_seen_week
from papers as p
left join paper_terms_extracted as e on p.paper_id = e.paper_id
where
    (e.paper_id is null or e.extractor_version <> $version)
    and ($paper_ids is null or list_contains($paper_ids, p.paper_id))
order by p.paper_id;
