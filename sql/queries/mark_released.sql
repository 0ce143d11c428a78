-- Record who released a quarantined entry ($quarantine_id), when and why.
update quarantine set released_at = $at, released_by = $by, release_note = $note
where quarantine_id = $quarantine_id
