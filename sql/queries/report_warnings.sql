-- Sequence gaps that remain among the listing files recorded so far (for the report).
select 'gap' as kind, format('{:03d}', after + 1) || case when missing_count > 1 then '–' || format('{:03d}', before - 1) else '' end as subject,
       missing_count as count
from sequence_gaps
order by kind, subject
