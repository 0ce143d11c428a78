"""Read, parse, clean, validate and prepare listing files (no DuckDB, no Prefect)."""
