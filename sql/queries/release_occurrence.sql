-- A released entry becomes an occurrence at its file and position.
insert into paper_occurrences (file_id, position, line, paper_id, raw_text, run_id, listed_number)
values ($file_id, $position, $line, $paper_id, $raw_text, $run_id, $listed_number)
