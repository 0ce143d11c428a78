-- Drop the related papers of a week before storing them again (paperwatch.db.related).
delete from related_papers where week = $week
