-- What one ingestion run ($run_id) quarantined.
select quarantine_id, kind, path, position, line, reasons
from quarantine
where run_id = $run_id
order by quarantine_id
