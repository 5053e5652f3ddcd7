"""The sets the cluster benchmarks deploy, and how they deploy them (shared by bench_*.py).

`document` is the generated set (slices × roles, every role 2 replicas of size 2: 1 slice × 2
roles is 4 objects, 100 × 10 is 2,000); `with_image` makes the template change a rollout needs;
`deploy` brings a set to steady state with `rollout step` passes, the LWS simulator settling
status between them.
"""

from __future__ import annotations

import copy
import time

from kubectl_disagg.kube.executor import ClusterExecutor
from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.rollout.stepper import Pass, run_pass
from testenv.lws_simulator import LWSSimulator


def document(namespace: str, slices: int, roles: int, image: str = "img:1", name: str = "big") -> dict:
    """A DisaggregatedSet of `slices` × `roles` (role0, role1, ...), as a manifest."""
    return {
        "apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"slices": slices, "roles": [
            {"name": f"role{i}", "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2, "workerTemplate": {
                "spec": {"containers": [{"name": "server", "image": image,
                                         "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}}
            for i in range(roles)]},
    }


def with_image(doc: dict, image: str) -> dict:
    """A copy of a set manifest whose every role runs `image`: a template change."""
    changed = copy.deepcopy(doc)
    for role in changed["spec"]["roles"]:
        template = role["spec"]["leaderWorkerTemplate"]
        for pod in (template.get("leaderTemplate"), template.get("workerTemplate")):
            for container in ((pod or {}).get("spec") or {}).get("containers") or ():
                container["image"] = image
    return changed


def one_step(cluster: ClusterExecutor, ds: DisaggregatedSet, namespace: str, max_in_flight: int = 1) -> Pass:
    """One `rollout step` pass under the set's Lease."""
    with cluster.lease(ds.name, namespace) as lease:
        return run_pass(cluster, ds, namespace, lease, max_in_flight=max_in_flight)


def deploy(cluster: ClusterExecutor, simulator: LWSSimulator, ds: DisaggregatedSet, namespace: str,
           max_in_flight: int = 1) -> float:
    """Step `ds` to steady state (at most 10 passes), settling status between passes: seconds taken."""
    started = time.perf_counter()
    for _ in range(10):
        if one_step(cluster, ds, namespace, max_in_flight).complete:
            return time.perf_counter() - started
        simulator.sync(namespace)
    raise RuntimeError("the set did not become steady in 10 passes")
