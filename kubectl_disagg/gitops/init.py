"""`rollout state init`: the first rollout state of sets driven through git, offline.

For sets with nothing deployed yet (a set already live is adopted by `rollout step --gitops`):
each set at its revision and replicas in every slice, by the file its state goes into.
"""

from __future__ import annotations

import os

from kubectl_disagg.core.model import DisaggregatedSet
from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.gitops.files import state_path
from kubectl_disagg.gitops.state import RolloutState, find_state
from kubectl_disagg.gitops.step import initial_state
from kubectl_disagg.manifests.reader import read_documents


def initial_states(sets: list[DisaggregatedSet], namespace: str | None,
                   explicit: str | None = None) -> dict[str, list[RolloutState]]:
    """`rollout state init`: the first state of each set, by the file it goes into; offline.

    For sets with nothing deployed yet (a set already live is adopted by `rollout step
    --gitops`). Refuses, every problem at once, a set that has a state already, a set read from
    stdin, or one whose namespace is unknown (no cluster is asked for a default).
    """
    problems: list[Problem | str] = []
    states: dict[str, list[RolloutState]] = {}
    if explicit and len(sets) != 1:
        raise UserError([f"--state {explicit}: names the rollout state of one DisaggregatedSet, and the input "
                         f"holds {len(sets)}"])
    for ds in sets:
        path = state_path(ds, explicit)
        target = ds.namespace or namespace
        if path is None:
            problems.append(f"{ds.source.file}: disaggregatedset/{ds.name}: its rollout state is kept beside its "
                            "file: give the set in a file (-f), not on stdin")
            continue
        if target is None:
            problems.append(Problem(ds.source.file, ds.source.line(("metadata",)), "metadata.namespace",
                                    f"disaggregatedset/{ds.name} names no namespace: give -n (the namespace it "
                                    "deploys to, for Argo CD the Application's destination)"))
            continue
        existing = find_state(read_documents([path]), ds, target) if os.path.isfile(path) else None
        if existing is not None:
            problems.append(Problem(path, existing.source.line(("metadata", "name")), "metadata.name",
                                    f"disaggregatedset/{ds.name} has a rollout state already: `rollout state "
                                    "init` writes only a first state (step it with `kubectl disagg rollout step "
                                    "--gitops`)"))
            continue
        states.setdefault(path, []).append(initial_state(ds, target))
    if problems:
        raise UserError(problems)
    return states
