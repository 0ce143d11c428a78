"""Entrypoint of the ``ingest-listings`` deployment of prefect.yaml (the flow lives in
:mod:`paperwatch.flows.ingest`)."""

from paperwatch.flows.ingest import ingest_listings

__all__ = ["ingest_listings"]
