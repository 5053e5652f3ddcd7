"""Planner inputs from `rollout plan`'s flags: comma-separated vectors, one value per role (or
one for every role), checked all at once. Pure.

`inputs_from_flags` is the offline plan (`--from 5,2 --to 5,2 --max-surge 2`); `inputs_from_set`
takes targets and budgets from a DisaggregatedSet and only `--from` from the flag. `Observed` is
what a live plan starts from, as a position store reads it (rollout/store.py `observe`). A problem
names the flag it is about as the caller spells it (`PlanFlags`: views/plan.py's `FLAGS`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubectl_disagg.core.api.model import DisaggregatedSet
from kubectl_disagg.core.controller.planner import PlanInputs, inputs_for_set
from kubectl_disagg.core.api.rollout_config import RolloutConfig
from kubectl_disagg.core.controller.snapshot import SliceLive, Snapshot
from kubectl_disagg.errors import UserError

if TYPE_CHECKING:  # a type from the layer above (the position a store records)
    from kubectl_disagg.core.delivery.position import Position

# A DisaggregatedSet has 2..10 roles; one role is still a meaningful plan to look at.
MAX_ROLES = 10
_COUNT = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class Observed:
    """What a position store reads for a set's live plan (design §9.7): the `position` recorded
    (None: none yet), each slice's progress (`live`: what it runs), and `snapshot`, the live
    objects where the store reads them (the cluster's; a set without a RolloutPolicy is then
    planned slice by slice from them, as reconcile sees them)."""

    position: Position | None
    live: tuple[SliceLive, ...]
    snapshot: Snapshot | None = None


@dataclass(frozen=True)
class PlanFlags:
    """How the problems name each input: the command's flags, spelled where its words are."""

    from_: str
    to: str
    max_surge: str
    max_unavailable: str
    roles: str


def inputs_from_flags(
    from_: str, to: str | None, max_surge: str, max_unavailable: str, roles: str | None, flags: PlanFlags
) -> PlanInputs:
    """Planner inputs from comma-separated flags; every problem is reported at once."""
    problems: list[str] = []
    initial_old = _counts(flags.from_, from_, problems)
    to_values = None if to is None else _counts(flags.to, to, problems)
    surge_values = _counts(flags.max_surge, max_surge, problems)
    unavailable_values = _counts(flags.max_unavailable, max_unavailable, problems)
    if initial_old is None:
        raise UserError(problems)  # from_ sets the role count every other flag is checked against
    n = len(initial_old)
    if not 1 <= n <= MAX_ROLES:
        problems.append(f"{flags.from_}: {plural(n, 'role')} given; a plan takes 1 to {MAX_ROLES}")

    target = initial_old if to is None else _per_role(flags.to, to_values, n, problems, flags, broadcast=False)
    surges = _per_role(flags.max_surge, surge_values, n, problems, flags, broadcast=True)
    unavailables = _per_role(flags.max_unavailable, unavailable_values, n, problems, flags, broadcast=True)
    names = _role_names(roles, n, problems, flags)

    if surges is not None and unavailables is not None:
        for name, surge, unavailable in zip(names or _default_names(n), surges, unavailables):
            if surge == 0 and unavailable == 0:
                problems.append(f"{flags.max_surge}/{flags.max_unavailable}: role {json.dumps(name)} has both 0; "
                                "at least one must be positive so the rollout has room to surge or drain")
    if problems:
        raise UserError(problems)
    # Each of these is None only with a problem reported.
    assert names is not None and target is not None and surges is not None and unavailables is not None
    return PlanInputs(
        roles=names,
        initial_old=initial_old,
        target=target,
        configs=tuple(RolloutConfig(s, u) for s, u in zip(surges, unavailables)),
    )


def inputs_from_set(ds: DisaggregatedSet, from_: str, flags: PlanFlags) -> PlanInputs:
    """Planner inputs from a DisaggregatedSet: targets and budgets per role, from_ as given."""
    problems: list[str] = []
    initial_old = _counts(flags.from_, from_, problems)
    if initial_old is not None and len(initial_old) != len(ds.roles):
        problems.append(f"{flags.from_}: {plural(len(initial_old), 'value')} given; disaggregatedset/{ds.name} "
                        f"has {len(ds.roles)} roles ({vector(ds.role_names)})")
    if problems:
        raise UserError(problems)
    assert initial_old is not None  # else a problem was reported
    return inputs_for_set(ds, initial_old)


def _counts(flag: str, text: str, problems: list[str]) -> tuple[int, ...] | None:
    """Comma-separated non-negative integers, or None (with problems noted) when any is not."""
    values = [item.strip() for item in text.split(",")]
    bad = [item for item in values if not _COUNT.fullmatch(item)]
    for item in bad:
        problems.append(f"{flag}: {json.dumps(item)} is not a non-negative integer")
    return None if bad else tuple(int(item) for item in values)


def _per_role(
    flag: str, values: tuple[int, ...] | None, n: int, problems: list[str], flags: PlanFlags, broadcast: bool
) -> tuple[int, ...] | None:
    """Counts for each of n roles; with `broadcast`, a single value stands for every role."""
    if values is None:
        return None  # already reported as not a count
    if broadcast and len(values) == 1:
        return values * n
    if len(values) != n:
        single = "1 for every role or " if broadcast else ""
        problems.append(f"{flag}: {plural(len(values), 'value')} given; "
                        f"expected {single}{n}, one per role as in {flags.from_}")
        return None
    return values


def _role_names(text: str | None, n: int, problems: list[str], flags: PlanFlags) -> tuple[str, ...] | None:
    if text is None:
        return _default_names(n)
    names = tuple(name.strip() for name in text.split(","))
    if len(names) != n:
        problems.append(f"{flags.roles}: {plural(len(names), 'name')} given; "
                        f"expected {n}, one per role as in {flags.from_}")
        return None
    if "" in names:
        problems.append(f"{flags.roles}: role names must not be empty")
        return None
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        problems.append(f"{flags.roles}: duplicate role name {', '.join(map(json.dumps, duplicates))}")
        return None
    return names


def _default_names(n: int) -> tuple[str, ...]:
    return tuple(f"role-{i}" for i in range(n))


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def vector(values: Iterable[object]) -> str:
    """A vector as its flag spells it: 5,2."""
    return ",".join(str(value) for value in values)
