-- Record a report written to the report folder (paperwatch.db.report_data.record_rendered).
insert into reports (week, kind, path, sha256, happened_at)
values ($week, 'rendered', $path, $sha256, $at)
