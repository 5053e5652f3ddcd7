"""`rollout step --until-complete` against the real LWS controller (the upstream stack): the
rollout, scale, abort and reshape scenarios of test_rollout_step.py, with pods on kwok nodes.

The real LWS status moves in ways a simulator's does not: after a scale-up the old status
lingers (observedGeneration below generation), then catches up while status.replicas is still
below spec; after a scale-down observedGeneration catches up while ready and replicas stay above
spec for a while. A run that says complete must have waited all of that out: every LWS's status
then reports exactly its spec, and its pods run.
"""

from __future__ import annotations

import copy

import pytest

from kubectl_disagg.core.api import naming
from kubectl_disagg.exits import StepExit
from tests.oracles.upstream_cluster import POD_PATH, Side, set_document, with_images
from tests.support.paths import load_sets
from tests.support.stepping import assert_matches_render

NAME = "llm"


@pytest.fixture
def side(upstream_stack, upstream_namespaces, capsys, tmp_path) -> Side:
    return Side(upstream_stack, upstream_namespaces(), capsys, tmp_path)


def two_roles(namespace: str, prefill: int = 2, decode: int = 1, *, slices: int = 1, extra: bool = False) -> dict:
    roles = [{"name": "prefill", "replicas": prefill, "image": "img:1", "size": 2},
             {"name": "decode", "replicas": decode, "image": "img:1"}]
    if extra:
        roles.insert(0, {"name": "encode", "replicas": 1, "image": "img:1"})
    return set_document(NAME, namespace, roles, slices=slices)


def step(side: Side, document: dict, label: str, **kwargs) -> tuple[int, str]:
    code, out, err = side.step_until_complete(side.write(document, label), **kwargs)
    assert "Traceback" not in err
    assert "reading the state again" not in err, err  # no 409 warnings from status writes
    return code, err


def assert_really_complete(side: Side, document: dict) -> None:
    """What `complete` promises, read from the real controllers' writes: each LWS's status is
    its spec's (observed, every group ready and updated), the pods are running, and the objects
    are what render says."""
    lws = [o for key, o in side.objects(NAME).items() if key[0] == "LeaderWorkerSet"]
    for obj in lws:
        spec, status = obj["spec"].get("replicas", 1), obj.get("status") or {}
        assert status.get("observedGeneration") == obj["metadata"]["generation"], obj["metadata"]["name"]
        assert (status.get("replicas", 0), status.get("readyReplicas", 0), status.get("updatedReplicas", 0)) == (
            spec, spec, spec), (obj["metadata"]["name"], spec, status)
    pods = side.cp.request("GET", POD_PATH.format(side.namespace))["items"]
    # A deleted LWS's pods go through the garbage collector after it (the background cascade of
    # `kubectl delete`): count those of the LWS that are there.
    names = {o["metadata"]["name"] for o in lws}
    live = [p for p in pods if (p["metadata"].get("labels") or {}).get("leaderworkerset.sigs.k8s.io/name") in names]
    size = {r["name"]: r["spec"]["leaderWorkerTemplate"].get("size", 1) for r in document["spec"]["roles"]}
    wanted = sum(o["spec"].get("replicas", 1) * size[o["metadata"]["labels"][naming.ROLE_LABEL]] for o in lws)
    assert len(live) == wanted and all(p["status"].get("phase") == "Running" for p in live)
    path = side.write(document, "check")
    (ds,) = load_sets([str(path)]).sets
    assert_matches_render(ds, _Live(side))


class _Live:
    """The reads assert_matches_render makes, from a Side."""

    def __init__(self, side: Side):
        self.side, self.namespace = side, side.namespace

    def lws(self, selector: str) -> list[dict]:
        return [o for key, o in self.side.objects(NAME).items() if key[0] == "LeaderWorkerSet"]

    def services(self, selector: str) -> list[dict]:
        return [o for key, o in self.side.objects(NAME).items() if key[0] == "Service"]


def test_deploy_then_scale_up_and_down_waits_for_the_real_status(side):
    for label, document in (("deploy", two_roles(side.namespace)),
                            ("up", two_roles(side.namespace, prefill=4, decode=2)),
                            ("down", two_roles(side.namespace, prefill=1, decode=1))):
        code, err = step(side, document, label)
        assert code == StepExit.OK, err
        assert_really_complete(side, document)


def test_template_change_over_two_slices(side):
    first = two_roles(side.namespace, slices=2)
    assert step(side, first, "v1")[0] == StepExit.OK
    second = with_images(first, "img:2")
    code, err = step(side, second, "v2")
    assert code == StepExit.OK, err
    assert_really_complete(side, second)


def test_roles_added_and_removed_and_slices_raised_and_lowered(side):
    shapes = [("v1", two_roles(side.namespace)), ("encode", two_roles(side.namespace, extra=True)),
              ("slices", two_roles(side.namespace, extra=True, slices=3)), ("back", two_roles(side.namespace))]
    for label, document in shapes:
        code, err = step(side, document, label)
        assert code == StepExit.OK, (label, err)
        assert_really_complete(side, document)


def test_an_abort_mid_rollout_returns_to_the_old_revision(side, upstream_stack):
    first = two_roles(side.namespace, prefill=3, decode=2)
    assert step(side, first, "v1")[0] == StepExit.OK
    pods = side.pods()
    with upstream_stack.nodes_paused():  # the new revision's pods never become ready: held mid-way
        code, err = step(side, with_images(first, "img:2"), "v2", timeout="8s")
        assert code == StepExit.TIMEOUT, err
    revisions = {o["metadata"]["labels"][naming.REVISION_LABEL] for o in side.objects(NAME).values()}
    assert len(revisions) == 2
    code, err = step(side, copy.deepcopy(first), "abort")  # the old template again: roll back
    assert code == StepExit.OK, err
    assert_really_complete(side, first)
    assert side.pods() == pods  # the old revision's pods, by uid: the abort restarted none
