"""paperwatch: scheduled ingestion of conference paper listings into DuckDB.

The library does the work as pure functions (``parse``, ``clean``, ``dedup``,
``terms``, ``report``); ``flows/`` wires them into Prefect flows and
``paperwatch.cli`` is the command line.
"""

__version__ = "0.1.0"
