-- A released entry becomes an occurrence at its file and position, with the record fields
-- the quarantine kept (title, authors, url, external_id; null when it kept none).
insert into paper_occurrences (
    file_id, position, line, paper_id, raw_text, run_id, listed_number,
    title, authors, url, external_id
)
values (
    $file_id, $position, $line, $paper_id, $raw_text, $run_id, $listed_number,
    $title, $authors, $url, $external_id
)
