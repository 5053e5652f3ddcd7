"""What a command says when NAME is not a stored DisaggregatedSet (`kube/named_set.py`'s
answer): a set deployed with -f is named as such, with what runs, and the command that works
for it (the same, with `-f FILE`); an absent one names the sets the namespace holds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from kubectl_disagg.views.invocation import command_line


class _Named(Protocol):
    """What `kube/named_set` answers for a set not stored, as this view reads it (views import
    nothing of kube/): `Absent` or `DeployedWithFiles`."""

    @property
    def name(self) -> str: ...

    @property
    def namespace(self) -> str: ...


@runtime_checkable
class _Absent(_Named, Protocol):
    @property
    def others(self) -> tuple[str, ...]: ...


class _DeployedWithFiles(_Named, Protocol):
    @property
    def lws(self) -> Sequence[object]: ...

    @property
    def revisions(self) -> list[str]: ...

    @property
    def slices(self) -> int: ...

    def replicas(self, revision: str) -> dict[str, tuple[int, int]]: ...


def not_stored_lines(found: _DeployedWithFiles | _Absent, verb: str, namespace_flag: str | None) -> list[str]:
    """The error lines of `rollout VERB NAME` for `found` (DeployedWithFiles or Absent)."""
    subject = f"disaggregatedset/{found.name}"
    if isinstance(found, _Absent):
        others = f"; the sets there: {', '.join(found.others)}" if found.others else \
            "; it holds no DisaggregatedSet and no LeaderWorkerSet of one"
        return [f"{subject} not found in namespace {found.namespace}{others}"]
    lines = [f"{subject} is not stored in namespace {found.namespace}: it was deployed with -f (its "
             f"{len(found.lws)} LeaderWorkerSet{'' if len(found.lws) == 1 else 's'} carry its name), so its "
             "template, replicas and RolloutPolicy are not in the cluster"]
    for revision in reversed(found.revisions):
        roles = ", ".join(f"{role} {ready}/{wanted} ready" for role, (ready, wanted) in found.replicas(revision).items())
        lines.append(f"  running: revision {revision}: {roles}")
    lines.append(f"  {found.slices} slice{'' if found.slices == 1 else 's'}; rollout {verb} needs the set's "
                 f"template: {command_line(verb, files=('FILE',), namespace=namespace_flag)}")
    return lines
