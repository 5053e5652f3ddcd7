"""`rollout status`'s one view over a git report, the state file named as the command names it."""

from __future__ import annotations

from dataclasses import replace

from kubectl_disagg.core.delivery.status import SetStatus
from kubectl_disagg.views.status import document
from kubectl_disagg.views.status_text import format_text as text


def kept_in(report: SetStatus, state_file: str | None) -> SetStatus:
    assert report.sync is not None
    return replace(report, sync=replace(report.sync, state_file=state_file))


def format_text(report: SetStatus, state_file: str | None) -> str:
    return text(kept_in(report, state_file), "")


def to_document(report: SetStatus, state_file: str | None) -> dict:
    return document(kept_in(report, state_file), "")
