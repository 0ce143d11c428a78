"""paperwatch's Prefect flows: ``flows.ingest``, ``flows.report``, ``flows.rebuild``,
``flows.snapshot``; ``flows.deployments`` serves them on a schedule."""

from paperwatch.allocator import keep_freed_memory

# A flow run that a Prefect worker starts imports this package before the flows import
# Polars: its process keeps Polars' freed memory a while, as the command line's does.
keep_freed_memory()
