"""The RolloutPolicy (design §9): which slices of a set move, and when. Parsing and checks. Pure.

    apiVersion: kubectl-disagg.x-k8s.io/v1alpha1
    kind: RolloutPolicy
    metadata: {name: llama, namespace: serving}
    spec:
      targetRef: {name: llama}      # the DisaggregatedSet; at most one policy per set
      maxSlicesInFlight: 2          # or "10%": slices started and not yet complete, at once
      waves:                        # cumulative, in slice index order: slice 0 is the canary
      - slices: 1
        pause: {}                   # hold until `rollout promote`
      - slices: "25%"
        analysis: [ttft]            # names of spec.analysis.checks
        pause: {duration: 15m}      # soak: this long after the wave's last slice completed
      analysis: {checks: [...]}     # checked by core/delivery/analysis.py where it exists
      onFailure: abort              # abort | pause

A policy is read beside its set (a document of the same `-f` input) or from the cluster for
`NAME`; `render` and `cmp generate` never pass it through. `parse_policy` checks a document on
its own, `policies_for` matches the policies of an input to its sets, and `resolve_waves` turns
the waves into slice counts for a set's `slices` (a last wave of 100% implied).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubectl_disagg.core.api import naming
from kubectl_disagg.core.delivery.analysis import Analysis, recorded_verdict_problems, role_problems, validate_analysis
from kubectl_disagg.core.api.durations import bounded
from kubectl_disagg.core.api.model import DEFAULT_NAMESPACE, DisaggregatedSet, is_policy_document
from kubectl_disagg.core.api.policy_types import (ABORT, PAUSE, ResolvedWave, RolloutPolicy, Wave, percent,
                                              resolve_count)
from kubectl_disagg.core.delivery.position import Position, recorded_position_problems
from kubectl_disagg.errors import Problem
from kubectl_disagg.manifests.source import Document, FieldPath, dotted

MAX_SOAK_SECONDS = 30 * 24 * 3600  # a pause's duration: at most 720h (docs/analysis.md)
ON_FAILURE = (ABORT, PAUSE)

_SPEC_FIELDS = frozenset({"targetRef", "maxSlicesInFlight", "waves", "analysis", "onFailure"})
_WAVE_FIELDS = frozenset({"slices", "pause", "analysis"})

def resolve_waves(policy: RolloutPolicy | None, slices: int) -> tuple[ResolvedWave, ...]:
    """The waves of `policy` for a set of `slices`: counts capped at `slices`, percentages rounded
    up (at least 1), never fewer than the wave before (a wave that rounds to no more slices
    admits none: its gates follow the previous wave's), and a last 100% wave when the policy
    ends short of it. No policy: one wave of every slice."""
    waves: list[ResolvedWave] = []
    start = 0
    for index, wave in enumerate(policy.waves if policy is not None else ()):
        end = max(start, min(slices, max(1, resolve_count(wave.slices, slices))))
        waves.append(ResolvedWave(index, start, end, wave.analysis, wave.pause, wave.duration))
        start = end
    if not waves or start < slices:
        waves.append(ResolvedWave(len(waves), start, slices, implied=bool(waves)))
    return tuple(waves)



def verdict_problems(ds: DisaggregatedSet, position: Position | None) -> list[tuple[FieldPath, str]]:
    """The verdicts of `position` that no analysis run of `ds`'s policy wrote (core.delivery.analysis
    `recorded_verdict_problems`: (path under the position, message) pairs); none without a
    policy. What both stores of a position check when they read one."""
    if ds.policy is None:
        return []
    return recorded_verdict_problems(position, ds.revision, resolve_waves(ds.policy, ds.slices), ds.policy.analysis)


def position_problems(ds: DisaggregatedSet, position: Position | None) -> list[tuple[FieldPath, str]]:
    """Why `position` is not one the planner could have written for `ds`'s rollout under its
    policy (core.delivery.position `recorded_position_problems`: (path under the position, message)
    pairs); none without a policy or for another rollout's position (which is not read). What
    both stores of a position check when they read one, beside `verdict_problems`."""
    if ds.policy is None or position is None or position.revision != ds.revision:
        return []
    waves = resolve_waves(ds.policy, ds.slices)
    # A set with fewer slices may resolve without the implied last wave: a position recorded
    # there before is still one the planner wrote (decide reads it as the last wave).
    return recorded_position_problems(position, waves, max(len(waves) - 1, len(ds.policy.waves)))


# --- reading ----------------------------------------------------------------------------------


class _Checker:
    def __init__(self, document: Document):
        self.document = document
        self.problems: list[Problem] = []

    def problem(self, path: FieldPath, message: str) -> Problem:
        return Problem(self.document.file, self.document.line(path), dotted(path), message)

    def fail(self, path: FieldPath, message: str) -> None:
        self.problems.append(self.problem(path, message))


def parse_policy(document: Document) -> tuple[RolloutPolicy | None, list[Problem]]:
    """The policy in `document`, or None with every problem found (FILE:LINE: path: message)."""
    check = _Checker(document)
    data = document.data
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(name, str) or not name:
        check.fail(("metadata", "name"), "Required value: a RolloutPolicy needs a name")
    if namespace is not None and not isinstance(namespace, str):
        check.fail(("metadata", "namespace"), "must be a string")
    spec = data.get("spec")
    if not isinstance(spec, dict):
        check.fail(("spec",), "Required value: a RolloutPolicy needs a spec with a targetRef")
        return None, check.problems
    for key in sorted(set(spec) - _SPEC_FIELDS, key=str):
        check.fail(("spec", key), f'unknown field "{key}" (known: {", ".join(sorted(_SPEC_FIELDS))})')
    target_ref = spec.get("targetRef")
    target = target_ref.get("name") if isinstance(target_ref, dict) else None
    if not isinstance(target, str) or not target:
        check.fail(("spec", "targetRef", "name"), "Required value: the name of the DisaggregatedSet this policy paces")
    budget = spec.get("maxSlicesInFlight")
    if budget is not None and not _int_orpercent(budget, minimum=1):
        check.fail(("spec", "maxSlicesInFlight"), f'must be an integer of at least 1 or a percentage like "10%" '
                   f"(1% to 100%), got {budget!r}")
    on_failure = spec.get("onFailure", ABORT)
    if on_failure not in ON_FAILURE:
        check.fail(("spec", "onFailure"), f'Unsupported value: {on_failure!r}: supported values: "abort", "pause"')
    analysis, check_names = _analysis(check, spec.get("analysis"))
    waves = _waves(check, spec.get("waves"), check_names)
    if check.problems:
        return None, check.problems
    assert isinstance(name, str) and isinstance(target, str)  # else a problem was found above
    return RolloutPolicy(name, namespace, target, waves, budget, on_failure, analysis, document), []


def _int_orpercent(value: object, minimum: int) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= minimum
    # As the CRD's rule: 1% to 100%, no leading zero.
    return isinstance(value, str) and re.fullmatch(r"(100|[1-9][0-9]?)%", value) is not None


def _analysis(check: _Checker, raw: object) -> tuple[object, set[str] | None]:
    """spec.analysis: validated by core/delivery/analysis.py where that module exists, kept raw otherwise.
    The check names waves may refer to (None: no analysis, so any name is unknown)."""
    if raw is None:
        return None, None
    path = ("spec", "analysis")
    if not isinstance(raw, dict):
        check.fail(path, "must be a mapping with the checks (checks: [{name: ..., query: ...}])")
        return None, None
    names: set[str] = set()
    checks = raw.get("checks")
    for entry in checks if isinstance(checks, list) else ():
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            names.add(entry["name"])
    model, problems = validate_analysis(raw, path, check.problem)
    check.problems.extend(_as_problem(check, p) for p in problems)
    return model, names


def _as_problem(check: _Checker, problem: Problem | tuple[FieldPath, str]) -> Problem:
    """A problem from the analysis checks: a Problem already, or a (field path, message) pair."""
    if isinstance(problem, Problem):
        return problem
    path, message = problem
    return Problem(check.document.file, check.document.line(tuple(path)), dotted(tuple(path)), message)


def _waves(check: _Checker, raw: object, check_names: set[str] | None) -> tuple[Wave, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        check.fail(("spec", "waves"), "must be a list of waves (- slices: 1)")
        return ()
    waves: list[Wave] = []
    last: dict[type, tuple[int, int]] = {}  # per form (count, percentage): the last value and its wave
    for index, entry in enumerate(raw):
        path: FieldPath = ("spec", "waves", index)
        if not isinstance(entry, dict):
            check.fail(path, "must be a mapping with slices (and pause, analysis)")
            continue
        for key in sorted(set(entry) - _WAVE_FIELDS, key=str):
            check.fail(path + (key,), f'unknown field "{key}" (known: analysis, pause, slices)')
        slices = entry.get("slices")
        if slices is None:
            check.fail(path + ("slices",), 'Required value: how many slices the rollout has reached after this '
                       'wave (a count, or a percentage like "25%")')
        elif not _int_orpercent(slices, minimum=1):
            check.fail(path + ("slices",), f'must be a count of at least 1 or a percentage like "25%" (1% to 100%), '
                       f"got {slices!r}")
        else:
            form, value = (int, slices) if isinstance(slices, int) else (str, percent(slices))
            if form in last and value <= last[form][0]:
                check.fail(path + ("slices",), f"waves are cumulative and strictly increasing: {slices!r} is not "
                           f"more than wave {last[form][1]}'s {raw[last[form][1]]['slices']!r}")
            last[form] = (value, index)
        gates = _gates(check, path, entry, check_names)
        if slices is not None:  # else the wave is reported above, and no policy is returned
            waves.append(Wave(slices, *gates))
    return tuple(waves)


def _gates(check: _Checker, path: FieldPath, entry: Mapping[str, Any],
           check_names: set[str] | None) -> tuple[tuple[str, ...], bool, float | None]:
    analysis = entry.get("analysis", [])
    names: list[str] = []
    if not isinstance(analysis, list) or not all(isinstance(n, str) for n in analysis):
        check.fail(path + ("analysis",), "must be a list of check names (of spec.analysis.checks)")
    else:
        for position, name in enumerate(analysis):
            if name in names:
                check.fail(path + ("analysis", position), f'check "{name}" is named twice')
            elif check_names is None or name not in check_names:
                known = ", ".join(sorted(check_names or ())) or "none: spec.analysis has no checks"
                check.fail(path + ("analysis", position), f'unknown check "{name}" (known: {known})')
            names.append(name)
    pause = entry.get("pause")
    duration = None
    if "pause" in entry and not isinstance(pause, dict):
        check.fail(path + ("pause",), "must be {} (until rollout promote) or {duration: 15m} (a soak)")
    elif isinstance(pause, dict):
        for key in sorted(set(pause) - {"duration"}, key=str):
            check.fail(path + ("pause", key), f'unknown field "{key}" (known: duration)')
        if "duration" in pause:
            duration = _duration(check, path + ("pause", "duration"), pause["duration"])
    return tuple(names), isinstance(pause, dict), duration


def _duration(check: _Checker, path: FieldPath, raw: object) -> float | None:
    seconds, why = bounded(raw, MAX_SOAK_SECONDS)
    if why is not None:
        check.fail(path, why)
    return seconds


# --- policies beside their sets ---------------------------------------------------------------


def policies_for(documents: Iterable[Document], sets: Sequence[DisaggregatedSet], namespace: str | None = None,
                 fallback: str = DEFAULT_NAMESPACE
                 ) -> tuple[dict[tuple[str | None, str], RolloutPolicy], list[Problem]]:
    """The policy of each set (keyed by (namespace, name) of the set) among `documents`, and
    every problem: a policy that does not parse, names no set of the input, or is the second
    for its set, and waves that admit fewer slices than the wave before for the set's size.

    A policy matches a set of its name in its namespace, once kubectl's one rule has filled in
    both: a document naming no namespace is in `namespace` (-n), else in `fallback` (the
    context's). A policy in "b" never paces a set -n puts in "a"."""
    by_set: dict[tuple[str | None, str], RolloutPolicy] = {}
    problems: list[Problem] = []
    documents = list(documents)

    def placed(written: str | None) -> str:
        return written or namespace or fallback

    # Sets of the input that did not validate: their own problems say why, not "no such set".
    named = {((d.data.get("metadata") or {}).get("name")) for d in documents
             if isinstance(d.data, dict) and d.data.get("kind") == naming.SET_KIND
             and isinstance(d.data.get("metadata"), dict)}
    for document in documents:
        if not is_policy_document(document.data):
            continue
        policy, found = parse_policy(document)
        problems.extend(found)
        if policy is None:
            continue
        home = placed(policy.namespace)
        matches = [ds for ds in sets if ds.name == policy.target and placed(ds.namespace) == home]
        if not matches and policy.target in named and policy.target not in {ds.name for ds in sets}:
            continue
        if not matches:
            elsewhere = sorted({placed(ds.namespace) for ds in sets if ds.name == policy.target})
            why = (f"; the input's is in namespace {', '.join(elsewhere)} (a document that names no namespace is "
                   "in -n's, else the context's)" if elsewhere else " (a policy is read beside its set: give both to -f)")
            problems.append(Problem(document.file, document.line(("spec", "targetRef", "name")), "spec.targetRef.name",
                                    f"names disaggregatedset/{policy.target} in namespace {home}, which is not in "
                                    f"the input{why}"))
            continue
        for ds in matches:
            key = (ds.namespace, ds.name)
            if key in by_set:
                first = by_set[key].source
                assert first is not None  # a policy read from a document
                problems.append(Problem(document.file, document.line(("spec", "targetRef", "name")),
                                        "spec.targetRef.name",
                                        f"a second RolloutPolicy for disaggregatedset/{ds.name} (the first: "
                                        f"rolloutpolicy/{by_set[key].name} at {first.file}:{first.line(('metadata',))}); "
                                        "a set has at most one"))
                continue
            problems.extend(check_against_set(policy, ds.slices))
            problems.extend(_analysis_roles(policy, document, ds.role_names))
            by_set[key] = policy
    return by_set, problems


def _analysis_roles(policy: RolloutPolicy, document: Document, roles: Sequence[str]) -> list[Problem]:
    """Checks whose role is not one of the set's."""
    if not isinstance(policy.analysis, Analysis):
        return []
    return role_problems(policy.analysis, list(roles), ("spec", "analysis"), _Checker(document).problem)


def check_against_set(policy: RolloutPolicy, slices: int) -> list[Problem]:
    """Waves that, for a set of `slices`, would admit fewer slices than the wave before them
    (a count after a larger percentage, say): the rollout could never reach them."""
    if policy.source is None:
        return []
    problems = []
    previous = 0
    for index, wave in enumerate(policy.waves):
        reached = min(slices, max(1, resolve_count(wave.slices, slices)))
        if reached < previous:
            path = ("spec", "waves", index, "slices")
            problems.append(Problem(policy.source.file, policy.source.line(path), dotted(path),
                                    f"admits {reached} of the set's {slices} slices, fewer than the {previous} "
                                    f"the wave before reached: waves are cumulative"))
        previous = max(previous, reached)
    return problems


def policy_from_object(stored: Mapping[str, Any]) -> tuple[RolloutPolicy | None, list[Problem]]:
    """A RolloutPolicy object as the API returns it."""
    metadata = stored.get("metadata") or {}
    return parse_policy(Document(dict(stored), f"rolloutpolicy/{metadata.get('name')} in "
                                               f"{metadata.get('namespace')}", 0, {}))
