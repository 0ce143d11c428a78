-- Drop a week's trending terms before storing them again (paperwatch.db.trends).
delete from trending_terms where week = $week
