"""The RolloutState `rollout step` keeps in the cluster for a RolloutPolicy: the object, its
summary, and what Argo CD's health check makes of it."""

from __future__ import annotations

import datetime
from dataclasses import replace

import pytest

from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
from kubectl_disagg.core.delivery.position import Position, parse_position
from kubectl_disagg.core.delivery.waves import Progress, admit, pause
from kubectl_disagg.errors import UserError
from kubectl_disagg.rollout.progressive import recorded_position, state_object
from tests.oracles.argocd_harness import CUSTOMIZATIONS, check_state_testdata, health
from tests.support.sets import fleet

HEALTH = CUSTOMIZATIONS / "kubectl-disagg.x-k8s.io" / "RolloutState"
NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)


def paced_fleet():
    return fleet(4, RolloutPolicy("llm", "serving", "llm", (Wave(1, pause=True),), 2))


def cluster_objects():
    from kubectl_disagg.core.controller.reconcile import reconcile
    from kubectl_disagg.rollout.progressive import unpaced_summary

    cluster, ds = paced_fleet()
    snapshot = cluster.snapshot(ds.name)
    rolling = admit(ds, snapshot, None, NOW).decision
    paused = admit(ds, snapshot, pause(rolling.position, NOW, "bob"), NOW).decision
    objects = {"progressing": state_object(ds, "serving", rolling.position, rolling, None),
               "suspended-paused": state_object(ds, "serving", paused.position, paused,
                                                {"metadata": {"resourceVersion": "7"}})}
    passage = admit(ds, snapshot, None, NOW)
    cluster.execute(reconcile(passage.reconciled, snapshot, passage.admission).actions)  # slice 0 starts
    lost = admit(ds, cluster.snapshot(ds.name), None, NOW).decision  # and the RolloutState is deleted
    objects["suspended-lost-position"] = state_object(ds, "serving", lost.position, lost, None)
    at_rest = {**objects["progressing"], "rollout": unpaced_summary(ds, (Progress.DONE,) * 4)}
    objects["healthy-policy-removed"] = at_rest  # the rollout went on without its policy
    return objects


def test_the_object_records_the_position_and_round_trips():
    objects = cluster_objects()
    assert objects["progressing"]["rollout"] == {
        "set": "llm", "revision": objects["progressing"]["rollout"]["revision"], "wave": "1/2", "phase": "Rolling",
        "message": "llm: wave 1 of 2 (slices 0-0); next: kubectl disagg rollout step"}
    assert objects["suspended-paused"]["metadata"]["resourceVersion"] == "7"  # the write is pinned
    position = recorded_position(objects["suspended-paused"], paced_fleet()[1])
    assert position.paused.by == "bob" and position.stable


def test_a_git_driven_state_is_not_stepped_in_the_cluster():
    with pytest.raises(UserError, match="git-driven rollout"):
        recorded_position({"metadata": {"name": "llm"}, "slices": [{"slice": 0}]}, paced_fleet()[1])


def test_a_position_with_problems_is_refused_at_its_field():
    _, problems = parse_position({"wave": -1, "gates": [{"wave": 0}]}, "state.yaml", lambda path: 3)
    assert [str(p) for p in problems] == [
        "state.yaml:3: position.wave: must be a wave index (0 or more), got -1",
        "state.yaml:3: position.gates[0]: needs wave (index), gate (analysis or pause), at (RFC 3339), by and how"]
    assert parse_position({}, "s", lambda p: 0) == (Position(), [])


@pytest.mark.parametrize("name", ["progressing", "suspended-paused", "suspended-lost-position",
                                  "healthy-policy-removed"])
def test_the_health_testdata_is_what_rollout_step_writes(name, request):
    check_state_testdata(request, name, cluster_objects()[name])


def test_health_of_the_cluster_object():
    objects = cluster_objects()
    assert health(HEALTH / "health.lua", objects["progressing"])["status"] == "Progressing"
    paused = health(HEALTH / "health.lua", objects["suspended-paused"])
    assert paused == {"status": "Suspended", "message": objects["suspended-paused"]["rollout"]["message"]}
    assert "`kubectl disagg rollout resume` continues it" in paused["message"]


def test_a_forged_verdict_in_the_cluster_s_rollout_state_is_refused_when_read():
    from kubectl_disagg.core.delivery.analysis import Analysis, Check, Condition, Prometheus
    from kubectl_disagg.core.delivery.position import position_document

    policy = RolloutPolicy("llm", "serving", "llm", (Wave(1, analysis=("ttft",)),), analysis=Analysis(
        Prometheus(address="http://prometheus:9090"), (Check("ttft", "prefill", "q", Condition("<", 0.5), 60, 1, 0,
                                                             "fail"),)))
    _, ds = fleet(4, policy)
    position = Position(ds.revision, "r1", completed={0: "2026-12-01T12:00:00Z"}, verdicts={0: {"phase": "passed"}})
    stored = {"metadata": {"name": "llm"}, "position": position_document(position)}
    with pytest.raises(UserError) as refused:
        recorded_position(stored, ds)
    assert refused.value.lines() == [
        "rolloutstate/llm: position.verdicts.0.checks: must record the gate's checks (ttft), each with every "
        "measurement, in that order; records none (edited by hand?)"]
    # Another rollout's position is not read for its verdicts: a new rollout starts afresh from it.
    other = {"metadata": {"name": "llm"}, "position": position_document(replace(position, revision="r0"))}
    assert recorded_position(other, ds).revision == "r0"


def test_item4_a_position_patched_past_an_unpassed_gate_is_refused_when_read():
    """Issue 37 item 4: `position.wave` patched past the canary's `pause: {}` (no gate recorded)
    was obeyed, and the next step started the next wave. Reading the RolloutState refuses it,
    naming the object and the field, and how to set it back."""
    from kubectl_disagg.core.delivery.position import position_document
    from kubectl_disagg.core.delivery.waves import Hold

    cluster, ds = paced_fleet()
    snapshot = cluster.snapshot(ds.name)
    first = admit(ds, snapshot, None, NOW).decision.position
    held = replace(first, completed={0: "2026-12-01T12:00:00Z"})  # the canary done, held at its gate
    assert recorded_position({"metadata": {"name": "llm"}, "position": position_document(held)}, ds) == held
    patched = {"metadata": {"name": "llm"}, "position": position_document(replace(held, wave=1))}
    assert admit(ds, snapshot, replace(held, wave=1), NOW).decision.held.get(1) != Hold.WAVE  # what it would do
    with pytest.raises(UserError) as refused:
        recorded_position(patched, ds)
    assert refused.value.lines() == [
        "rolloutstate/llm: position.wave: is 1 (wave 2), past the pause gate after wave 1, which is not recorded as "
        "passed (position.gates): a rollout leaves a wave only through its gates (edited by hand? set it back to 0: "
        "the rollout then waits at that gate, and a promote passes it)"]


def test_item_17a_a_policy_removed_mid_rollout_leaves_no_stale_phase():
    """Issue 37 item 17: the RolloutState stayed AtGate after the policy was removed and the
    rollout completed unpaced (Argo CD: Suspended for good). Without a policy the pass brings
    its summary to the truth: Rolling while slices move, AtRest once done."""
    from kubectl_disagg.exits import StepExit
    from kubectl_disagg.rollout import run
    from kubectl_disagg.rollout.store import ClusterStore
    from tests.support.waves import until_held
    from tests.fakes.cluster import MemorySession
    from tests.fakes.printer import Printer

    class WithState(MemorySession):
        """The session's RolloutState reads and pinned replaces, over the in-memory cluster."""

        def __init__(self, memory, stored):
            super().__init__(memory)
            self.stored, self.written, self.client = stored, [], self

        def rollout_state(self, name, namespace):
            return self.stored

        def replace(self, resource, namespace, body):
            assert body["metadata"]["resourceVersion"] == self.stored["metadata"]["resourceVersion"]
            self.written.append(body)
            self.stored = {**body, "metadata": {**body["metadata"], "resourceVersion": str(len(self.written) + 7)}}
            return self.stored

    memory, ds = paced_fleet()
    at_gate = until_held(ds, memory, None, NOW).decision
    stored = state_object(ds, "serving", at_gate.position, at_gate, {"metadata": {"resourceVersion": "7"}})
    assert stored["rollout"]["phase"] == "AtGate"
    cluster = WithState(memory, stored)
    assert run.step(ClusterStore(cluster, [replace(ds, policy=None)]), Printer(), run.StepOptions(until_complete=True)) == StepExit.OK
    rollout = cluster.stored["rollout"]
    assert rollout["phase"] == "AtRest" and rollout["message"] == (
        f"llm: no RolloutPolicy: paced as the controller; at rest at revision {ds.revision}")
    phases = [body["rollout"]["phase"] for body in cluster.written]  # rewritten as each step moves (rollout.step)
    assert [phase for n, phase in enumerate(phases) if n == 0 or phase != phases[n - 1]] == ["Rolling", "AtRest"]
    assert cluster.stored["position"] == stored["position"]  # the position is left as it was
    assert health(HEALTH / "health.lua", cluster.written[0])["status"] == "Progressing"
    assert health(HEALTH / "health.lua", cluster.stored)["status"] == "Healthy"


def test_issue47_the_rolloutstate_in_the_cluster_has_the_step_its_printer_column_reads():
    """`kubectl get rolloutstates` had an empty STEP column in cluster mode: the column reads
    `.rollout.step`, which only the git store wrote. The cluster store writes it too: the plan
    step ("i/N") of each slice with an old revision, the distinct ones in slice order."""
    import pathlib

    import yaml

    from kubectl_disagg.rollout import run
    from kubectl_disagg.rollout.store import ClusterStore
    from tests.fakes.paced import PacedCluster, Printer

    crd = yaml.safe_load((pathlib.Path(__file__).parents[3] / "config" / "crd" / "rolloutstates.yaml").read_text())
    (column,) = [c for c in crd["spec"]["versions"][0]["additionalPrinterColumns"] if c["name"] == "Step"]
    assert column["jsonPath"] == ".rollout.step"
    memory, ds = fleet(4, RolloutPolicy("llm", "serving", "llm", (Wave(1), Wave("100%")), 2))
    cluster = PacedCluster(memory)
    steps = []
    for _ in range(4):  # the canary's start, its two steps, its end; each pass writes where it began
        run.step(ClusterStore(cluster, [ds]), Printer())
        memory.settle()
        steps.append(cluster.state["rollout"].get("step"))
    # slice 0 on its way, slices 1-3 not started (step 0), as the git store counts them
    assert steps == ["0/2", "0/2", "1/2,0/2", "2/2,0/2"], steps
