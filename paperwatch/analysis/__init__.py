"""Duplicates, terms, trend statistics, related papers: the maths (no DuckDB, no Prefect)."""
