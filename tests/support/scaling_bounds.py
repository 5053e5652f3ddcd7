"""The bounds one pass of a rollout keeps while the set scales under it (design §10.1), read from
the LWS counts before and after the pass: one check for the property test over random fleets
(tests/unit/rollout/test_scaling_property.py) and the integration tests on the real control
plane (tests/integration/test_scaling.py).

Per slice that was rolling before the pass and per role, with D the replicas in force, E =
max(D, the new revision's count before the pass) the effective target and the budgets D's
rollingUpdateConfiguration resolves to: old + new stays at most max(what it was, E +
max(maxSurge, 1)); a role whose rollout started at or above E stays at least min(what it was,
E − maxUnavailable); the new revision never runs a role above E. Every revision group runs all
its roles or none, and no slice gains the set's revision outside the slices the promoted waves
admit. A slice a RolloutPolicy holds at one revision runs each role at D after the pass
(design §10.1: a replicas change is not a template change, and waits for no wave)."""

from __future__ import annotations

from kubectl_disagg.core.api.rollout_config import resolve_config

Groups = dict[int, dict[str, dict[str, int]]]  # slice → revision → role → replicas


def pass_violations(ds, before: Groups, after: Groups, initial: dict[tuple[int, str], int],
                    admitted: int) -> list[str]:
    """What the pass from `before` to `after` broke, in words (empty: nothing). `ds`: the set
    with the replicas in force; `initial`: (slice, role) → what its old revisions started the
    rollout with; `admitted`: the slices 0..admitted-1 the promoted waves admit."""
    found: list[str] = []
    revision = ds.revision
    for s, groups in after.items():
        for rev, counts in groups.items():
            if any(n == 0 for n in counts.values()) and any(n > 0 for n in counts.values()):
                found.append(f"slice {s} revision {rev} runs only some of its roles: {counts}")
        was = before.get(s, {})
        if revision in groups and revision not in was and was and s >= admitted:
            found.append(f"slice {s} got revision {revision}, but the promoted waves admit 0-{admitted - 1} only")
        old_before = sum(n for rev, counts in was.items() if rev != revision for n in counts.values())
        if s >= ds.slices or revision not in was or old_before == 0:
            continue  # not rolling before this pass: at rest, starting, or a slice gained or removed
        for role in ds.roles:
            config = resolve_config(role.rolling_update, role.replicas)
            new_before = was[revision].get(role.name, 0)
            goal = max(role.replicas, new_before)
            total_before = sum(c.get(role.name, 0) for c in was.values())
            total = sum(c.get(role.name, 0) for c in groups.values())
            new = groups.get(revision, {}).get(role.name, 0)
            where = f"slice {s} role {role.name} (replicas {role.replicas}, {config}): {was} -> {groups}"
            if total > max(total_before, goal + max(config.surge, 1)):
                found.append(f"above target + maxSurge: {where}")
            if initial.get((s, role.name), 0) >= goal and total < min(total_before, goal - config.unavailable):
                found.append(f"below target - maxUnavailable: {where}")
            if new > max(goal, new_before):
                found.append(f"new above its effective target: {where}")
    return found


def held_violations(ds, held: dict[int, str], after: Groups) -> list[str]:
    """The slices the pass held (`held`: slice → why) that run one revision alone after it, and
    not each role at the replicas in force (`ds`: its roles sized as the pass read them)."""
    wanted = {role.name: role.replicas for role in ds.roles if role.scaled or not role.external}
    found = []
    for s, why in sorted(held.items()):
        groups = after.get(s, {})
        if len(groups) != 1:
            continue
        ((revision, counts),) = groups.items()
        missed = {role: n for role, n in counts.items() if role in wanted and n != wanted[role]}
        if missed:
            found.append(f"slice {s} held ({why}) at revision {revision} runs {counts}, not the replicas in force "
                         f"{wanted}")
    return found
