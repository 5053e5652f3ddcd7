"""The session of a paced `rollout step` (and of the verbs) over MemoryCluster: a Lease one
process holds at a time, the RolloutState (create, and PUT pinned to its resourceVersion, as the
API server's are), Events; and `brake`, a verb run by a person while the stepper holds the Lease.
Shared by the brakes' tests and the fleet-sized text's (tests/unit/views/test_fleet_text.py)."""

from __future__ import annotations

import contextlib
import copy
import datetime
import itertools
from types import SimpleNamespace

from kubectl_disagg.errors import Conflict
from kubectl_disagg.kube.client import LEASE, NotFound
from kubectl_disagg.kube.lease import LeaseHeld
from kubectl_disagg.rollout.progressive import recorded_position
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.verbs import run_verb
from kubectl_disagg.views.verbs import VerbConsole
from tests.fakes.cluster import MemoryExecutor
from tests.fakes.printer import Printer as RunPrinter

NS = "serving"


class Printer(RunPrinter):
    """What a run of `rollout step` (and a verb) showed."""

    def analysis_progress(self, gate):
        return lambda run_: None

    def done(self, result):
        self.reports.append(result)

    refused, conflicted = VerbConsole.refused, VerbConsole.conflicted  # the views' words, into `error`


class StateClient:
    """What the steppers and verbs ask of the API server besides the LWS: the RolloutState
    (create, and PUT pinned to its resourceVersion) and the Lease (read)."""

    def __init__(self, cluster: PacedCluster):
        self.cluster = cluster
        self.versions = itertools.count(100)

    def serves(self, resource):
        return True

    def send(self, *args, **kwargs):
        raise OSError("no SelfSubjectReview here")  # whoami falls back to the local user

    def create(self, resource, namespace, body):
        if self.cluster.state is not None:
            raise Conflict(f"rolloutstate/{body['metadata']['name']} already exists")
        return self._store(body)

    def replace(self, resource, namespace, body):
        stored = self.cluster.state
        if stored is None or stored["metadata"]["resourceVersion"] != body["metadata"]["resourceVersion"]:
            self.cluster.conflicts.append(body["metadata"]["resourceVersion"])
            raise Conflict(f"rolloutstate/{body['metadata']['name']} changed since it was read (409 Conflict)")
        return self._store(body)

    def get(self, resource, namespace, name):
        if resource == LEASE and self.cluster.holder is not None:
            return {"metadata": {"name": name, "resourceVersion": "1"},
                    "spec": {"holderIdentity": self.cluster.holder, "leaseDurationSeconds": 30,
                             "renewTime": datetime.datetime.now(datetime.timezone.utc).strftime(
                                 "%Y-%m-%dT%H:%M:%S.%fZ")}}
        raise NotFound(f"{resource.kind.lower()}/{name} not found")

    def _store(self, body):
        stored = copy.deepcopy(dict(body))
        stored["metadata"]["resourceVersion"] = str(next(self.versions))
        self.cluster.state = stored
        self.cluster.writes.append(stored)
        return copy.deepcopy(stored)


class PacedCluster(MemoryExecutor):
    """A session of `rollout step` and of the verbs over MemoryCluster: a Lease one process
    holds at a time (a second taker is refused, as by the API server), the RolloutState, Events;
    `between(cluster, n)` runs at each watch between passes (n counts from 1)."""

    default_namespace = NS

    def __init__(self, memory, between=lambda cluster, n: None, settles=True):
        super().__init__(memory)
        self.client = StateClient(self)
        self.state, self.writes, self.conflicts, self.events = None, [], [], []
        self.holder = None
        self.between, self.settles = between, settles
        self.actions: list = []  # every LWS write carried out, in order

    def snapshot(self, set_name, namespace, *, scalers=False, services=True):
        return super().snapshot(set_name, namespace, scalers=scalers)

    def execute(self, action, namespace):
        super().execute(action, namespace)
        self.actions.append(action)

    @contextlib.contextmanager
    def lease(self, set_name, namespace, wait_until=None, holder=None):
        if self.holder is not None:
            raise LeaseHeld("kubectl-disagg-" + set_name, namespace, self.holder, None)
        self.holder = "stepper@host/1/abc"
        try:
            yield SimpleNamespace(duration=30, renew_if_due=lambda: None, held=True)
        finally:
            self.holder = None

    def wait_for_change(self, set_name, namespace, resource_version, timeout, kind="LeaderWorkerSet",
                        state_version=None):
        self.watches += 1
        self.between(self, self.watches)
        if self.settles:
            self.memory.settle()
        return self.settles

    @property
    def memory(self):
        return self.cluster

    def rollout_state(self, name, namespace):
        return copy.deepcopy(self.state)

    def record_event(self, event):
        self.events.append(event)

    def position(self, ds):
        return recorded_position(self.state, ds)


def brake(verb: str, ds, results: list, after=None):
    """A `between` hook: at the watch `after` (the first by default), run `rollout VERB` as a
    person would, while the stepper holds the Lease; its exit code and output kept."""
    def hook(cluster, n):
        if n == (after or 1):
            printer = Printer()
            code = run_verb(ClusterStore(cluster, [ds], None), verb, printer)
            results.append(SimpleNamespace(code=code, printer=printer, actions=len(cluster.actions)))
    return hook


class Lagging(PacedCluster):
    """The LWS controller one watch behind: scaled LWS report 0 ready at the first watch after a
    write, all ready at the next (so each step of a slice waits at least once, as on a cluster)."""

    def wait_for_change(self, set_name, namespace, resource_version, timeout, kind="LeaderWorkerSet",
                        state_version=None):
        self.watches += 1
        self.between(self, self.watches)
        lagging = self.watches % 2 == 1
        self.memory.settle(ready_cap=(lambda name, replicas: 0) if lagging else None)
        return True
