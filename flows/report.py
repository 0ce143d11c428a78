"""Entrypoint of the ``weekly-report`` deployment of prefect.yaml (the flow lives in
:mod:`paperwatch.flows.report`)."""

from paperwatch.flows.report import weekly_report

__all__ = ["weekly_report"]
