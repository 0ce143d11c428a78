-- The paper of a released entry, when its text is not a paper yet ($paper_id and its fields).
insert into papers (
    paper_id, abstract, abstract_raw, method_name, first_sentence, word_count, code_urls,
    venue, year, first_file_id, first_position, first_seen, first_seen_week,
    title, authors, url, external_id
)
select
    $paper_id, $abstract, $abstract_raw, $method_name, $first_sentence, $word_count,
    $code_urls, $venue, $year, $file_id, $position, $at, $week,
    $title, $authors, $url, $external_id
where not exists (select 1 from papers where paper_id = $paper_id)
returning paper_id
