-- Sequence gaps next to a listing file first seen in $week (for the report): a gap that
-- no file of the week borders was reported in an earlier week, and an empty week has none.
select 'gap' as kind, format('{:03d}', g.after + 1) || case when g.missing_count > 1 then '–' || format('{:03d}', g.before - 1) else '' end as subject,
       g.missing_count as count
from sequence_gaps g
where exists (
    select 1 from listing_files f
    where f.first_seen_week = $week and f.status <> 'duplicate'
        and f.sequence_number in (g.after, g.before)
)
order by kind, subject
