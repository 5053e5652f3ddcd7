"""What `rollout status` prints for -o yaml|json: each report as a DisaggregatedSet document with
its status (`data_format`). For people, `status_text.format_reports` (a Jinja2 template); the
looks themselves, and -w, are `rollout/status.py`'s."""

from __future__ import annotations

from kubectl_disagg.core.delivery.status import SetStatus, to_document
from kubectl_disagg.manifests.writer import format_objects
from kubectl_disagg.rollout.status import Format


def data_format(output: str) -> Format:
    """-o yaml|json: each report as a DisaggregatedSet document with its status."""
    def format(reports: list[SetStatus], now: str) -> str:
        return format_objects([to_document(report, now) for report in reports], output)
    return format
