-- A released entry of file $file_id counts as loaded, no longer as quarantined.
update listing_files set
    entries_loaded = entries_loaded + 1,
    entries_quarantined = entries_quarantined - 1
where file_id = $file_id
