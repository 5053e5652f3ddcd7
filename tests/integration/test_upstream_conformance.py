"""Conformance against the real DisaggregatedSet controller (the upstream stack).

For each set, side by side on one cluster: the controller runs it as a stored set in one
namespace, `rollout step --until-complete` runs it from a file in another. Then:

- the objects each leaves are equal field for field (minus what the API server sets, the
  ownerReference and our managed-by label);
- during a template change every LWS's sequence of `spec.replicas` is the same on both sides;
- `rollout plan` of the change lists, per role, exactly the counts the controller's old and new
  LWS pass through;
- `rollout status NAME -o json` on the controller's set equals the `.status` the controller
  wrote (all but lastTransitionTime, which says when we looked), at rest and at a point held
  mid-rollout by pausing kwok's nodes.
"""

from __future__ import annotations

import json
import time

import pytest

from kubectl_disagg.core.controller.planner import next_step
from kubectl_disagg.core.api.rollout_config import RolloutConfig
from kubectl_disagg.exits import StepExit
from testenv.upstream import ZONE_LABEL
from tests.oracles.upstream_cluster import ReplicaRecorder, Side, comparable, set_document, wait_until, with_images, without_times

NAME = "llm"


def role(name: str, replicas: int, *, size: int = 1, rolling: dict | None = None) -> dict:
    return {"name": name, "replicas": replicas, "image": "img:1", "size": size, "rolling": rolling}


SETS = {
    "two-roles": dict(roles=[role("prefill", 2, size=2), role("decode", 1)]),
    "three-roles": dict(roles=[role("encode", 1), role("prefill", 2), role("decode", 2)]),
    "slices": dict(roles=[role("prefill", 2), role("decode", 1)], slices=2),
    "placement": dict(roles=[role("prefill", 1), role("decode", 1)], slices=2,
                      placement={"type": "ExclusiveTopology", "topology": ZONE_LABEL}),
    "surge": dict(roles=[role("prefill", 3, rolling={"maxSurge": 2}), role("decode", 2, rolling={"maxSurge": 1})]),
    "unavailable": dict(roles=[role("prefill", 3, rolling={"maxSurge": 0, "maxUnavailable": 1}),
                               role("decode", 2, rolling={"maxSurge": 0, "maxUnavailable": 1})]),
    "percentages": dict(roles=[role("prefill", 4, rolling={"maxSurge": "50%", "maxUnavailable": "25%"}),
                               role("decode", 2, rolling={"maxSurge": "25%", "maxUnavailable": "50%"})]),
}


def document(case: str, namespace: str = "") -> dict:
    spec = SETS[case]
    return set_document(NAME, namespace, spec["roles"], slices=spec.get("slices", 1), placement=spec.get("placement"))


@pytest.fixture
def sides(upstream_stack, upstream_namespaces, capsys, tmp_path) -> tuple[Side, Side]:
    """(the controller's namespace, the plugin's namespace)."""
    return (Side(upstream_stack, upstream_namespaces(), capsys, tmp_path),
            Side(upstream_stack, upstream_namespaces(), capsys, tmp_path))


def our_status(side: Side) -> dict:
    code, out, err = side.cli("rollout", "status", NAME, "-n", side.namespace, "-o", "json")
    assert code in (0, 3), err
    return json.loads(out)["status"]


def settled_status(side: Side, quiet: float = 2.0, timeout: float = 60.0) -> dict:
    """The controller's status once it has observed the set's generation and stopped moving
    for `quiet` seconds (a point held by paused nodes, or rest)."""
    last, since = None, time.monotonic()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stored = side.stored(NAME)
        status = stored.get("status") or {}
        current = json.dumps(without_times(status), sort_keys=True)
        if status.get("observedGeneration") != stored["metadata"]["generation"] or current != last:
            last, since = current, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return status
        time.sleep(0.2)
    raise AssertionError(f"the controller's status of {NAME} kept moving: {last}")


def assert_same_objects(controller: Side, plugin: Side) -> None:
    theirs = {key: comparable(obj) for key, obj in controller.objects(NAME).items()}
    ours = {key: comparable(obj) for key, obj in plugin.objects(NAME).items()}
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        assert ours[key] == theirs[key], key


def replicas(side: Side) -> dict[str, int]:
    """LWS name → spec.replicas."""
    return {key[1]: obj["spec"].get("replicas", 1) for key, obj in side.objects(NAME).items()
            if key[0] == "LeaderWorkerSet"}


def distinct(values) -> list[int]:
    """`values` with consecutive repeats counted once (as ReplicaRecorder records them)."""
    out: list[int] = []
    for value in values:
        if not out or out[-1] != value:
            out.append(value)
    return out


def assert_plan_is_the_controllers_path(plugin: Side, path, case: str, sequences: dict[str, list[int]],
                                        new: set[str]) -> None:
    """`rollout plan -f` from the set's counts: per role, its old and its new counts over the
    steps are the sequences every old and new LWS of that role went through under the controller
    (`new`: the names of the LWS of the set's revision)."""
    counts = ",".join(str(role["replicas"]) for role in SETS[case]["roles"])
    code, out, err = plugin.cli("rollout", "plan", "-f", str(path), "--from", counts, "-o", "json")
    assert code == StepExit.OK, err
    plan = json.loads(out)
    compared = 0
    for index, role_name in enumerate(plan["roles"]):
        planned = {True: distinct(step["new"][index] for step in plan["steps"]),
                   False: distinct(step["old"][index] for step in plan["steps"])}
        for name, seen in sequences.items():
            if name.endswith(f"-{role_name}"):
                assert seen == planned[name in new], (name, seen, planned[name in new])
                compared += 1
    assert compared == len(sequences)


def assert_status_matches(controller: Side) -> None:
    theirs = without_times(settled_status(controller))
    assert without_times(our_status(controller)) == theirs


@pytest.mark.parametrize("case", sorted(SETS))
def test_objects_replica_sequences_and_status_equal_the_controllers(case, sides, upstream_stack):
    controller, plugin = sides
    first, second = document(case), with_images(document(case), "img:2")

    controller.apply(first)
    controller.controller_at_rest(NAME)
    code, _, err = plugin.step_until_complete(plugin.write(first, "v1"))
    assert code == StepExit.OK, err
    assert_same_objects(controller, plugin)
    assert_status_matches(controller)

    with ReplicaRecorder(upstream_stack, controller.namespace) as by_controller:
        controller.apply(second)
        controller.controller_at_rest(NAME)
    with ReplicaRecorder(upstream_stack, plugin.namespace) as by_plugin:
        code, _, err = plugin.step_until_complete(plugin.write(second, "v2"))
        assert code == StepExit.OK, err
        # The LWS controller's status writes move a drained LWS under its delete: sent again
        # pinned to the new version, never a "changed since it was read" warning.
        assert "reading the state again" not in err, err
        wait_until(lambda: set(plugin.objects(NAME)) == set(controller.objects(NAME)), "the drained LWS deleted")
    print(case, by_controller.sequences, sorted(by_controller.deleted))
    assert_plan_is_the_controllers_path(plugin, plugin.write(second, "v2"), case, by_controller.sequences,
                                        {key[1] for key in controller.objects(NAME) if key[0] == "LeaderWorkerSet"})
    assert len(by_controller.sequences) == 2 * len(SETS[case]["roles"]) * SETS[case].get("slices", 1)
    assert by_plugin.sequences == by_controller.sequences
    assert by_plugin.deleted == by_controller.deleted
    assert_same_objects(controller, plugin)
    assert_status_matches(controller)


@pytest.mark.parametrize("case", ["two-roles", "unavailable"])
def test_status_mid_rollout_equals_the_controllers(case, sides, upstream_stack):
    controller, _ = sides
    controller.apply(document(case))
    controller.controller_at_rest(NAME)
    with upstream_stack.nodes_paused():
        controller.apply(with_images(document(case), "img:2"))
        assert_status_matches(controller)
    controller.controller_at_rest(NAME)
    assert_status_matches(controller)


NEWEST_FIRST, OLDEST_FIRST = "newest first", "oldest first"


def by_role(names, counts: dict[str, int]) -> list[int]:
    """Per role of the "surge" set (spec order), the sum of `counts` over `names`."""
    return [sum(counts[n] for n in names if n.endswith(f"-{role['name']}")) for role in SETS["surge"]["roles"]]


def drain(groups: list[dict[str, int]], budget: list[int]) -> list[dict[str, int]]:
    """executor.go `scaleDownOld`: each role's budget spent on the old groups in the order
    given; a group any of whose roles would reach 0 goes to 0 whole, and the drain is charged
    only to the roles that reached it (to every role when none did)."""
    roles = [role["name"] for role in SETS["surge"]["roles"]]
    budget, out = list(budget), []
    for group in groups:
        if all(b <= 0 for b in budget):
            out.append(dict(group))
            continue
        index = {name: next(i for i, r in enumerate(roles) if name.endswith(f"-{r}")) for name in group}
        take = {name: min(budget[index[name]], n) for name, n in group.items()}
        triggered = {name for name, n in group.items() if n - take[name] == 0}
        after = {name: 0 if triggered else n - take[name] for name, n in group.items()}
        for name, n in group.items():
            if n > after[name] and (name in triggered or not triggered):
                budget[index[name]] -= take[name]
        out.append(after)
    return out


def held_by_reading(held_first: dict[str, int], v1: set[str], new: list[str], *, order: str,
                    drained_listed: bool) -> dict[str, int]:
    """Where the controller holds after v3 over v2 held by paused nodes (`held_first`: v1's and
    v2's counts), by its reading: what its next two reconciles do (executor.go
    `ReconcileRollingUpdate`) until a scale-up of v3 waits for pods that cannot become ready.

    The first step is a drain (old at the surge ceiling); executor.go drains the old groups
    newest first by creation (`sortByNewestTimestamp`); the run also accepts the other order,
    and says which it met. A group drained to 0 whole is deleted (`cleanupDrainedLWS`) before
    the next step; if the controller's informer still lists it then (`drained_listed`, its
    timing), its initial-replicas annotation still counts in initialOld and the scale-up of v3
    is smaller. We list fresh: ours must be (newest first, not listed)."""
    target = [role["replicas"] for role in SETS["surge"]["roles"]]
    configs = [RolloutConfig(role["rolling"]["maxSurge"], 0) for role in SETS["surge"]["roles"]]
    v2 = {name: n for name, n in held_first.items() if name not in v1}
    first = {name: n for name, n in held_first.items() if name in v1}
    groups = [v2, first] if order == NEWEST_FIRST else [first, v2]
    initial = by_role(held_first, held_first)  # the annotations set when v3 began
    point: dict[str, int] = {name: 0 for name in new}
    while True:
        current = by_role([n for g in groups for n in g], {n: c for g in groups for n, c in g.items()})
        step = next_step(initial, current, by_role(new, point), target, configs)
        assert step is not None
        for name in new:
            point[name] = next(step.new[i] for i, r in enumerate(SETS["surge"]["roles"]) if name.endswith(f"-{r['name']}"))
        groups = drain(groups, [c - o for c, o in zip(current, step.old)])
        if any(step.new):  # v3's pods cannot become ready: the controller waits here
            break
        groups = [g for g in groups if any(g.values())]
        if not drained_listed:
            initial = by_role([n for g in groups for n in g], held_first)
    for group in groups:
        point.update(group)
    return point


def assert_held_where_the_controller_holds(ours: dict[str, int], held_first: dict[str, int],
                                           held_second: dict[str, int], v1: set[str],
                                           created: dict[str, str]) -> None:
    """The controller's point must be one its arithmetic leads to by some reading; ours must be
    the fresh, newest-first one (equal to the controller's whenever it read that way)."""
    new = sorted(name for name in held_second if name not in held_first)
    readings = {(order, listed): held_by_reading(held_first, v1, new, order=order, drained_listed=listed)
                for order in (NEWEST_FIRST, OLDEST_FIRST) for listed in (False, True)}
    met = [key for key, point in readings.items() if point == held_second]
    assert met, ("the controller held where no reading leads", held_second, readings, created)
    assert ours == readings[NEWEST_FIRST, False], ("held where the fresh, newest-first reading leads",
                                                   ours, readings[NEWEST_FIRST, False])
    print("controller's reading after v3:", met, "created:", created)


def test_a_rollout_over_a_rollout_takes_the_controllers_steps(sides, upstream_stack):
    controller, plugin = sides
    first = document("surge")
    second, third = with_images(first, "img:2"), with_images(first, "img:3")
    controller.apply(first)
    controller.controller_at_rest(NAME)
    v1 = set(replicas(controller))
    code, _, err = plugin.step_until_complete(plugin.write(first, "v1"))
    assert code == StepExit.OK, err

    with ReplicaRecorder(upstream_stack, controller.namespace) as by_controller:
        with upstream_stack.nodes_paused():
            controller.apply(second)
            held = settled_status(controller)
            assert_status_matches(controller)
            held_first = replicas(controller)
            created = {key[1]: obj["metadata"]["creationTimestamp"] for key, obj in controller.objects(NAME).items()
                       if key[0] == "LeaderWorkerSet"}
            controller.apply(third)
            settled_status(controller)
            assert_status_matches(controller)
            held_second = replicas(controller)
        controller.controller_at_rest(NAME)
    with ReplicaRecorder(upstream_stack, plugin.namespace) as by_plugin:
        with upstream_stack.nodes_paused():
            code, _, err = plugin.step_until_complete(plugin.write(second, "v2"), timeout="10s")
            assert code == StepExit.TIMEOUT, err  # held where the controller was held
            assert replicas(plugin) == held_first, "held at the same point as the controller after v2"
            code, _, err = plugin.step_until_complete(plugin.write(third, "v3"), timeout="10s")
            assert code == StepExit.TIMEOUT, err
            assert_held_where_the_controller_holds(replicas(plugin), held_first, held_second, v1, created)
        code, _, err = plugin.step_until_complete(plugin.write(third, "v3"))
        assert code == StepExit.OK, err
        wait_until(lambda: set(plugin.objects(NAME)) == set(controller.objects(NAME)), "the drained LWS deleted")
    assert held["roleStatuses"]
    # Past the held points both react to readiness as it arrives: pods of two revisions become
    # ready together when kwok resumes, and whichever read comes first decides whether a count
    # is skipped on the way (timing, not arithmetic). So: the same LWS, each from the same start
    # to the same end, exactly equal at both held points (above) and at rest (below).
    assert sorted(by_plugin.sequences) == sorted(by_controller.sequences)
    for name, theirs in by_controller.sequences.items():
        ours = by_plugin.sequences[name]
        assert (ours[0], ours[-1]) == (theirs[0], theirs[-1]), (name, ours, theirs)
    assert by_plugin.deleted == by_controller.deleted
    assert_same_objects(controller, plugin)
