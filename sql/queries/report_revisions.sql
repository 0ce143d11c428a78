-- Re-issued listings of $week, with the entries their new version dropped.
select
    r.path,
    r.name,
    r.unchanged,
    len(r.added_paper_ids) - len(r.revised_paper_ids) as added,
    len(r.revised_paper_ids) as revised,
    coalesce(
        (
            select list({'method_name': p.method_name, 'first_sentence': p.first_sentence} order by p.paper_id)
            from papers p where list_contains(r.removed_paper_ids, p.paper_id)
        ),
        []
    ) as removed
from listing_revisions r
where r.week = $week
order by r.first_seen, r.path
