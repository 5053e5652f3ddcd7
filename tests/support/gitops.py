"""Builders of git-driven rollouts shared by the gitops, view and command tests."""

from __future__ import annotations


from kubectl_disagg.rollout.git_step import Outcome, gitops_step
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml
from tests.fakes.argo import deploy, round_trip
from tests.support.sets import make_set


class Counted:
    """`module.name` wrapped in a counter (monkeypatched back after the test)."""

    def __init__(self, monkeypatch, module, name: str):
        self.calls, wrapped = 0, getattr(module, name)

        def counting(*args, **kwargs):
            self.calls += 1
            return wrapped(*args, **kwargs)
        monkeypatch.setattr(module, name, counting)


def stepped(argo, new, state, steps: int):
    """`steps` git steps toward `new`, each synced and settled first: the state committed last."""
    for _ in range(steps):
        argo.sync(new, state)
        argo.cluster.settle()
        state = round_trip(gitops_step(new, state, argo.snapshot(new)).state, new)
    return state


def mid_rollout(slices: int = 3):
    """A rollout one planner step in, synced and ready: (Argo, the set, the committed state)."""
    argo, state = deploy(make_set({"prefill": 2, "decode": 2}, slices=slices))
    new = make_set({"prefill": 2, "decode": 2}, image="img:2", slices=slices)
    for _ in range(2):  # the rollout's start, then its first step
        argo.sync(new, state)
        argo.cluster.settle()
        step = gitops_step(new, state, argo.snapshot(new))
        assert step.outcome == Outcome.ADVANCED, step
        state = round_trip(step.state, new)
    argo.sync(new, state)
    argo.cluster.settle()
    return argo, new, state


def external_set(image: str, decode: int = 2):
    from kubectl_disagg.core.delivery.sets import load_sets

    data = make_set({"prefill": 2, "decode": decode}, image=image).source.data
    roles = [dict(role) for role in data["spec"]["roles"]]
    roles[1]["scaling"] = {"mode": "External"}
    data = {**data, "spec": {**data["spec"], "roles": roles}}
    (ds,) = load_sets(parse_stream(to_yaml(data), "ds.yaml"))
    return ds


def states():
    """(name, set, state): at rest, and mid-rollout after two steps."""
    old = make_set({"prefill": 2, "decode": 2})
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    argo, state = deploy(old)
    out = [("healthy", old, state)]
    for _ in range(2):
        argo.sync(new, state)
        argo.cluster.settle()
        state = round_trip(gitops_step(new, state, argo.snapshot(new)).state, new)
    out.append(("suspended", new, state))
    return out


def step_paths(cluster, paths, reading, namespace):
    """`rollout step --gitops -f PATHS` as the command runs it: the inputs read once, the
    directory loaded once (`gitops.directory.load`), each set stepped over git's store
    (`rollout.git_run.GitStore`, `rollout.run.step_set`), its steps as they would be written, nothing written."""
    from kubectl_disagg.rollout import git_run as run
    from kubectl_disagg.rollout.run import StepOptions, step_set
    from kubectl_disagg.inputs import tree as inputs
    from tests.fakes.printer import Printer

    tree = inputs.read_tree(paths, reading)
    store = run.GitStore(tree, reading, namespace, fallback=cluster.default_namespace, cluster=cluster)
    how, printer = StepOptions(), Printer()
    for ds, target in store.targets(how, printer):
        step_set(store, ds, target, how, printer)
    return store.decided()
