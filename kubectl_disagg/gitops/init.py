"""`rollout state init`: the first rollout state of sets driven through git, offline.

For sets with nothing deployed yet (a set already live is adopted by `rollout step --gitops`):
each set at its revision and replicas in every slice, by the file its state goes into.
"""

from __future__ import annotations

from kubectl_disagg.errors import Problem, UserError
from kubectl_disagg.gitops.directory import Directory
from kubectl_disagg.gitops.state import RolloutState
from kubectl_disagg.gitops.step import initial_state


def initial_states(directory: Directory) -> dict[str, list[RolloutState]]:
    """`rollout state init`: the first state of each set of `directory` (read with -n as its
    namespace and no fallback), by the file it goes into; offline.

    For sets with nothing deployed yet (a set already live is adopted by `rollout step
    --gitops`). Refuses, every problem at once, a set that has a state already, a set read from
    stdin, or one whose namespace is unknown (no cluster is asked for a default).
    """
    problems: list[Problem | str] = []
    states: dict[str, list[RolloutState]] = {}
    for entry in directory.sets:
        ds, path = entry.ds, entry.state_path
        if path is None:
            problems.append(f"{ds.source.file}: disaggregatedset/{ds.name}: its rollout state is kept beside its "
                            "file: give the set in a file (-f), not on stdin")
            continue
        if not entry.namespace:
            problems.append(Problem(ds.source.file, ds.source.line(("metadata",)), "metadata.namespace",
                                    f"disaggregatedset/{ds.name} names no namespace: give -n (the namespace it "
                                    "deploys to, for Argo CD the Application's destination)"))
            continue
        if entry.state is not None:
            problems.append(Problem(path, entry.state.source.line(("metadata", "name")), "metadata.name",
                                    f"disaggregatedset/{ds.name} has a rollout state already: `rollout state "
                                    "init` writes only a first state (step it with `kubectl disagg rollout step "
                                    "--gitops`)"))
            continue
        states.setdefault(path, []).append(initial_state(ds, entry.namespace))
    if problems:
        raise UserError(problems)
    return states
