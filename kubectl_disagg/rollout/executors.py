"""Where a pass's actions land: the `Executor` protocol the passes of `stepper` run over, and
the `HeldLease` it hands out.

Two executors implement it: the cluster (`kube.executor.ClusterExecutor`) and a rollout state
(`gitops.executor.StateExecutor`); `stepper` plans, checks and runs passes over either without
knowing which. Protocols only: no behaviour lives here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from kubectl_disagg.core.reconcile import Action
from kubectl_disagg.core.snapshot import Snapshot


class HeldLease(Protocol):
    """The per-set lock an executor hands out: renewed while a pass writes."""

    duration: int

    def renew_if_due(self) -> None: ...


class Executor(Protocol):
    """Reads a set's live state and carries out reconcile's actions on it.

    `execute` raises a `UserError`; a `Conflict` means "what was read has moved on: read
    again", and `stepper.drive` retries it.
    """

    def snapshot(self, set_name: str, namespace: str, *, scalers: bool = False) -> Snapshot: ...

    def execute(self, action: Action, namespace: str, *, dry_run: bool = False) -> None:
        """Carry out `action`; with `dry_run`, have it judged only (nothing stored), refusals raised alike."""

    def authorize(self, actions: Sequence[Action], namespace: str) -> None:
        """Raise a `UserError` unless every one of `actions` is permitted: checked whole, before a write."""

    def occupants(self, names: Sequence[tuple[str, str]], namespace: str) -> Mapping[tuple[str, str], Mapping]:
        """The objects that already exist at these (kind, name)s, as read; absent ones left out."""

    def lease(self, set_name: str, namespace: str,
              wait_until: float | None = None) -> AbstractContextManager[HeldLease]:
        """The set's lock; with `wait_until` (a `time.monotonic()` value or math.inf), queue for it.
        A lease of `duration` math.inf never needs renewing (nothing else can take the set)."""

    def wait_for_change(self, set_name: str, namespace: str, resource_version: str, timeout: float) -> bool: ...
