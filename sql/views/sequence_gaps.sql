-- Sequence numbers missing between the listing files recorded so far
-- (files named NNN_<16 hex>.txt). One row per gap: the numbers after `after`
-- and before `before` are missing.
create or replace view sequence_gaps as
with numbers as (
    select distinct sequence_number as n
    from listing_files
    where sequence_number is not null and status not in ('duplicate', 'moved')
),
ordered as (
    select n, lead(n) over (order by n) as next_n from numbers
)
select
    n as after,
    next_n as before,
    next_n - n - 1 as missing_count
from ordered
where next_n - n > 1
order by n
