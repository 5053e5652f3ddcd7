"""The dashboard's document (views/dashboard.py): a held canary drawn as a grid of slices × roles
by revision and readiness, its waves, the gate ahead and the budget; an abort's cells drawn as
aborted. Over the in-memory cluster with a RolloutState (tests/fakes/paced.py)."""

from __future__ import annotations

import json

from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
from kubectl_disagg.dashboard.looks import look_at
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.verbs import run_verb
from kubectl_disagg.views.dashboard import SetLook, page_document, set_document
from kubectl_disagg.wait import Deadline
from kubectl_disagg.exits import StepExit
from tests.fakes.paced import NS, PacedCluster, Printer
from tests.support.sets import fleet


def held_canary(slices=4, **gate):
    memory, ds = fleet(slices, RolloutPolicy("llm", NS, "llm", (Wave(1, **gate),), 2))
    cluster = PacedCluster(memory)
    code = run.step(ClusterStore(cluster, [ds]), Printer(),
                    run.StepOptions(until_complete=True, deadline=Deadline.after(30)))
    assert code == StepExit.HELD
    return cluster, ds


def drawn(cluster, ds):
    from kubectl_disagg.clock import SYSTEM_CLOCK

    return set_document(look_at(cluster, ds, NS, SYSTEM_CLOCK))


def test_a_canary_held_at_its_pause_is_drawn_as_slices_by_roles_with_its_waves_and_gate():
    cluster, ds = held_canary(pause=True)
    doc = drawn(cluster, ds)
    assert doc["roles"] == ["prefill", "decode"]
    assert [[cell["class"] for cell in row["cells"]] for row in doc["grid"]] == [["new", "new"]] + [["stable", "stable"]] * 3
    assert all(cell["ready"] for row in doc["grid"] for cell in row["cells"])
    assert [(w["wave"], w["start"], w["end"], w["state"]) for w in doc["waves"]] == [(1, 0, 1, "done"), (2, 1, 4, "pending")]
    assert [row["wave"] for row in doc["grid"]] == [1, 2, 2, 2]
    assert doc["gate"]["waitsFor"] == "promote" and doc["gate"]["atGate"] and doc["gate"]["wave"] == 0
    assert doc["budget"] == {"inFlight": 0, "max": 2, "done": 1, "slices": 4, "held": 3}
    assert doc["stateVersion"] != ""  # what an action sends back as its guard
    assert doc["history"][0]["outcome"] and doc["history"][0]["revision"] == doc["target"]


def test_an_abort_draws_the_rollout_s_revision_as_aborted_and_says_who_and_why():
    cluster, ds = held_canary(pause=True)
    store = ClusterStore(cluster, [ds], NS)
    run_verb(store, "abort", Printer(), reason="ttft <script>alert(1)</script>")
    doc = drawn(cluster, ds)
    assert doc["grid"][0]["cells"][0]["class"] == "aborted"
    assert doc["aborted"]["reason"] == "ttft <script>alert(1)</script>"  # text, drawn as text by the page
    assert doc["phase"] == "Aborted" and doc["rolloutRevision"] == ds.revision and doc["target"] == doc["stable"]
    assert [w["state"] for w in doc["waves"]] == ["rolling back", "at stable"]
    assert run.step(ClusterStore(cluster, [ds]), Printer(),
                    run.StepOptions(until_complete=True, deadline=Deadline.after(30))) == StepExit.HELD
    back = drawn(cluster, ds)
    assert [w["state"] for w in back["waves"]] == ["at stable", "at stable"]
    assert {cell["class"] for row in back["grid"] for cell in row["cells"]} == {"stable"}


def test_the_page_document_is_json_and_orders_sets_by_namespace_and_name():
    cluster, ds = held_canary(pause=True)
    looks = [look_at(cluster, ds, NS, __import__("kubectl_disagg.clock").clock.SYSTEM_CLOCK),
             SetLook("a", "zz", None, problem="does not load")]
    page = page_document(looks, "2026-01-01T00:00:00Z", behind=[{"kind": "LeaderWorkerSet", "namespace": NS,
                                                                  "since": "x", "why": "cut"}])
    assert [s["key"] for s in page["sets"]] == [f"{NS}/llm", "zz/a"]
    assert page["behind"][0]["why"] == "cut" and page["actions"]
    assert json.loads(json.dumps(page)) == page


def test_through_git_the_committed_position_and_the_next_action_are_drawn():
    from kubectl_disagg.clock import SYSTEM_CLOCK
    from kubectl_disagg.rollout.git_status import gitops_status
    from tests.fakes.argo import deploy
    from tests.support.sets import make_set

    old = make_set({"prefill": 2, "decode": 2})
    new = make_set({"prefill": 2, "decode": 2}, image="img:2")
    argo, state = deploy(old)
    snapshot = argo.snapshot(new)
    report = gitops_status(new, state, snapshot, argo.served, now=SYSTEM_CLOCK.now())
    doc = set_document(SetLook("llm", NS, report, snapshot.lws, ("prefill", "decode"),
                               commands={"promote": "kubectl disagg rollout promote --gitops -f apps/ --commit"}))
    assert doc["sync"]["nextAction"] == "sync" and not doc["sync"]["synced"]
    assert doc["commands"]["promote"].startswith("kubectl disagg rollout promote --gitops")
    assert [cell["class"] for cell in doc["grid"][0]["cells"]] == ["other", "other"]  # the old revision runs
