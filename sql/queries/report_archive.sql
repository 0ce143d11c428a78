-- The weeks that have a rendered report, newest first, with their figures: the archive
-- page reports/out/index.html (paperwatch.report.render.render_archive).
with weeks as (
    select distinct week from reports where kind = 'rendered'
)
select
    w.week,
    (select count(*) from papers p where p.first_seen_week = w.week) as new_papers,
    (select count(*) from duplicates_by_week d where d.week = w.week) as duplicates,
    (select count(*) from listing_files f where f.first_seen_week = w.week) as files,
    (
        select count(*) from quarantine q where q.week = w.week and q.kind = 'entry'
    ) as entries_quarantined,
    (
        select coalesce(list(distinct f.venue || ' ' || f.year order by f.venue || ' ' || f.year), [])
        from listing_files f where f.first_seen_week = w.week and f.venue is not null
    ) as venues,
    (
        select max(r.happened_at) from reports r where r.week = w.week and r.kind = 'sent'
    ) as sent_at
from weeks w
order by w.week desc
