-- Standing warnings for the report: sequence gaps and files of $week without a header.
select 'gap' as kind, format('{:03d}', after + 1) || case when missing_count > 1 then '–' || format('{:03d}', before - 1) else '' end as subject,
       missing_count as count
from sequence_gaps
union all
select 'no_header' as kind, name as subject, 1 as count
from listing_files
where first_seen_week = $week and status = 'loaded' and header is null
order by kind, subject
