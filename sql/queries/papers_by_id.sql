-- What a report shows of the papers $ids (a list of paper_id): name, first sentence, week.
select paper_id, method_name, first_sentence, first_seen_week as week
from papers
where list_contains($ids, paper_id)
