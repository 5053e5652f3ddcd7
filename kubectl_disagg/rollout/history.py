"""`rollout history` and `rollout undo` over either store (design §10.3): the revisions each set
has run, as its store records them (rollout/store.py `history`: the cluster's RolloutState, or
git's commits), and the revision an undo writes back (core/delivery/undo.py's rule). One function each,
whatever the store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubectl_disagg.core.delivery.history import RevisionEntry, entry_of
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.delivery.undo import target_of
from kubectl_disagg.errors import UserError

if TYPE_CHECKING:
    from kubectl_disagg.rollout.store import PositionStore


@dataclass(frozen=True)
class SetHistory:
    """A set's `entries` (oldest first), and the one `--revision` asked for (`shown`)."""

    ds: DisaggregatedSet
    namespace: str
    entries: list[RevisionEntry]
    shown: RevisionEntry | None = None


def histories(store: PositionStore, revision: str | None = None) -> list[SetHistory]:
    """Each set's history as its store records it; with `revision`, that revision's newest
    entry too, every set whose history lacks it refused at once."""
    found, problems = [], []
    for ds, namespace in store.sets():
        entries = store.history(ds, namespace)
        shown = entry_of(entries, revision) if revision is not None else None
        if isinstance(shown, str):
            problems.append(f"disaggregatedset/{ds.name} in {namespace}: {shown}")
            continue
        found.append(SetHistory(ds, namespace, entries, shown))
    if problems:
        raise UserError(problems)
    return found


def undo_targets(store: PositionStore, to_revision: str | None) -> dict[str, RevisionEntry]:
    """Each set's revision to go back to (`to_revision`, else core/delivery/undo.py's default), by name;
    every set that has none refused at once."""
    targets, problems = {}, []
    for history in histories(store):
        target = target_of(history.entries, history.ds.revision, to_revision)
        if isinstance(target, str):
            problems.append(f"disaggregatedset/{history.ds.name} in {history.namespace}: {target}")
        else:
            targets[history.ds.name] = target
    if problems:
        raise UserError(problems)
    return targets
