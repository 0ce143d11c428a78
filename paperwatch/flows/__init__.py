"""paperwatch's Prefect flows: ``paperwatch.flows.ingest``, ``.report``, ``.rebuild``,
``.snapshot``; ``paperwatch.flows.deployments`` serves them on a schedule. The top-level
``flows/`` folder of the repository holds only the entrypoints of ``prefect.yaml``."""

from paperwatch.allocator import keep_freed_memory

# A flow run that a Prefect worker starts imports this package before the flows import
# Polars: its process keeps Polars' freed memory a while, as the command line's does.
keep_freed_memory()
