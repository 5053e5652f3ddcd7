"""Where a pass's actions land: `PassExecutor`, what one pass of `stepper` reads and writes
through; `Executor`, that and what `stepper.drive` needs to repeat passes (the set's Lease, a
watch); and the `HeldLease` it hands out.

The cluster (`kube.executor.ClusterExecutor`) is an `Executor`: `drive`, `check_pass` and the
dry runs run over it. A rollout state (`gitops.executor.StateExecutor`) is a `PassExecutor` only:
a git-driven step is one `run_pass` whose actions land in the state, and `gitops.rules` replays a
recorded step with it; nothing drives it, leases it or watches it (git serialises writers).
Protocols only: no behaviour lives here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from kubectl_disagg.core.controller.reconcile import Action
from kubectl_disagg.core.controller.snapshot import Snapshot

if TYPE_CHECKING:
    from kubectl_disagg.wait import Deadline


class HeldLease(Protocol):
    """The per-set lock an executor hands out: renewed while a pass writes."""

    duration: int

    def renew_if_due(self) -> None: ...


class PassExecutor(Protocol):
    """Reads a set's live state and carries out reconcile's actions on it: what one pass uses
    (`stepper.run_pass`, `stepper.read_and_reconcile`).

    `execute` raises a `UserError`; a `Conflict` means "what was read has moved on: read
    again", and `stepper.drive` retries it.
    """

    def snapshot(self, set_name: str, namespace: str, *, scalers: bool = False) -> Snapshot: ...

    def execute(self, action: Action, namespace: str, *, dry_run: bool = False) -> None:
        """Carry out `action`; with `dry_run`, have it judged only (nothing stored), refusals raised alike."""

    def authorize(self, actions: Sequence[Action], namespace: str) -> None:
        """Raise a `UserError` unless every one of `actions` is permitted: checked whole, before a write."""

    def occupants(self, names: Sequence[tuple[str, str]], namespace: str) -> Mapping[tuple[str, str], Mapping[str, Any]]:
        """The objects that already exist at these (kind, name)s, as read; absent ones left out."""


class Executor(PassExecutor, Protocol):
    """A `PassExecutor` that passes can be repeated over (`stepper.drive`): the set's Lease for
    the run, and a watch between passes."""

    def lease(self, set_name: str, namespace: str,
              wait_until: Deadline | None = None) -> AbstractContextManager[HeldLease]:
        """The set's lock; with `wait_until` (a Deadline; wait.NEVER: no limit), queue for it.
        A lease of `duration` math.inf never needs renewing (nothing else can take the set)."""

    def wait_for_change(self, set_name: str, namespace: str, resource_version: str, timeout: float) -> bool: ...
