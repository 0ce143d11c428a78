-- Items quarantined in $week (released or not), for the report. Records without an
-- abstract (a titles-only list, a BibTeX entry with no abstract field) are listed once per
-- file, "no abstract: N records", with their titles as the preview; entries is the number
-- of entries a row stands for (0 for a whole file).
with week_items as (
    select * from quarantine where week = $week
),
no_abstract as (
    select
        min(quarantine_id) as quarantine_id,
        'entry' as kind,
        path,
        null::integer as position,
        null::integer as line,
        [
            'no abstract: ' || count(*) || case when count(*) = 1 then ' record' else ' records' end
            || ' of this file (from line ' || min(line) || ')'
        ] as reasons,
        null::varchar as released_by,
        left(string_agg(raw_text, ' · ' order by position), 160) as preview,
        count(*) as entries
    from week_items
    where kind = 'entry' and reasons = ['no abstract'] and released_by is null
    group by file_id, path
),
single as (
    select
        quarantine_id,
        kind,
        path,
        position,
        line,
        reasons,
        released_by,
        coalesce(left(raw_text, 160), '') as preview,
        case when kind = 'entry' then 1 else 0 end as entries
    from week_items
    where not (kind = 'entry' and reasons = ['no abstract'] and released_by is null)
)
select * from single
union all by name
select * from no_abstract
order by quarantine_id
