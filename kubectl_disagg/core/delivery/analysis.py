"""Analysis gates (design §9.4): the checks of a RolloutPolicy, their queries, and their verdicts.

Pure: `validate_analysis` reads `spec.analysis` into an `Analysis` (every problem at once, each at
its FILE:LINE through the caller's `locate`); `fill` substitutes a query's placeholders, each
value quoted for the string literal it stands in (regex-quoted in a `=~`/`!~` matcher), so no name
can add or change a selector; `judge` turns measurements into a verdict; `verdict_problems` reads
a recorded verdict back and says where it is not one a run wrote. No I/O, no clock: the
measurements carry their times, taken by the runner (`rollout/analysis.py`).

About 700 lines on purpose: the four stages share the `Check` type and design §9.4's vocabulary
(placeholders, noData, failureLimit) and are read in that order, the last judging a record again
with the third's `judge`; `promql.py`, the one part of use on its own, is already its own module.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from kubectl_disagg.core.api import apirules

from kubectl_disagg.core.delivery import promql
from kubectl_disagg.core.api.durations import bounded, format_duration
from kubectl_disagg.errors import Problem
from kubectl_disagg.manifests.source import FieldPath, JsonObject

from kubectl_disagg.core.api.policy_types import ResolvedWave
from kubectl_disagg.core.delivery.position import Position

PLACEHOLDERS = ("set", "namespace", "role", "revision", "slices")
NO_DATA = ("fail", "pass")
DEFAULT_INTERVAL, DEFAULT_COUNT, DEFAULT_FAILURE_LIMIT, DEFAULT_NO_DATA = "1m", 1, 0, "fail"
MAX_COUNT = 1000
MAX_INTERVAL_SECONDS = 24 * 3600  # a check's interval: at most 24h (docs/analysis.md)
PASSED, FAILED, RUNNING = "passed", "failed", "running"

_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
_CONDITION = re.compile(r"\s*(<=|>=|==|!=|<|>)\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*")
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
# The placeholders' stand-ins for the offline syntax check: names as long as names get.
_SAMPLE_VALUES = {"set": "s" * 63, "namespace": "n" * 63, "role": "r" * 63, "revision": "0" * 10,
                  "slices": "0|1|2"}

Locate = Callable[[FieldPath, str], Problem]  # (full field path, message) -> the Problem at its FILE:LINE


@dataclass(frozen=True)
class Condition:
    op: str
    threshold: float

    def holds(self, value: float) -> bool:
        return _COMPARE[self.op](value, self.threshold)

    def __str__(self) -> str:
        return f"{self.op} {self.threshold:g}"


@dataclass(frozen=True)
class Check:
    name: str
    role: str
    query: str
    condition: Condition
    interval: float  # seconds
    count: int
    failure_limit: int
    no_data: str  # fail | pass


@dataclass(frozen=True)
class Prometheus:
    """Where Prometheus answers: an `address` (a URL), or a Service through the API server's proxy."""

    address: str | None = None
    namespace: str | None = None
    service: str | None = None
    port: int | str | None = None


@dataclass(frozen=True)
class Analysis:
    prometheus: Prometheus
    checks: tuple[Check, ...]

    def check(self, name: str) -> Check:
        return next(check for check in self.checks if check.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(check.name for check in self.checks)


# --- validation ------------------------------------------------------------------------------

_CHECK_FIELDS = ("name", "role", "query", "successCondition", "interval", "count", "failureLimit", "noData")


def validate_analysis(raw: object, prefix: FieldPath, locate: Locate) -> tuple[Analysis | None, list[Problem]]:
    """`spec.analysis` read into an Analysis, or None and every problem (at `prefix` + its field)."""
    report = _Report(prefix, locate)
    problems = report.problems
    if not isinstance(raw, dict):
        report((), "Invalid value: must be an object with prometheus and checks")
        return None, problems
    _unknown(raw, ("prometheus", "checks"), (), report)
    prometheus = _prometheus(raw.get("prometheus"), report)
    checks = raw.get("checks")
    parsed: list[Check] = []
    if not isinstance(checks, list) or not checks:
        report(("checks",), "Required value: at least one check" if checks in (None, [])
               else "Invalid value: must be a list of checks")
    else:
        seen: dict[str, int] = {}
        for index, item in enumerate(checks):
            check = _check(item, ("checks", index), report)
            if check is None:
                continue
            if check.name in seen:
                report(("checks", index, "name"), f'Duplicate value: "{check.name}" (also checks[{seen[check.name]}])')
            seen.setdefault(check.name, index)
            parsed.append(check)
    if problems or prometheus is None:
        return None, problems
    return Analysis(prometheus, tuple(parsed)), problems


class _Report:
    """Collects problems, each at the caller's FILE:LINE for `prefix` + its path."""

    def __init__(self, prefix: FieldPath, locate: Locate):
        self.prefix, self.locate = prefix, locate
        self.problems: list[Problem] = []

    def __call__(self, path: FieldPath, message: str) -> None:
        self.problems.append(self.locate(self.prefix + path, message))


def role_problems(analysis: Analysis, roles: list[str], prefix: FieldPath, locate: Locate) -> list[Problem]:
    """The checks whose role is not a role of the target set."""
    return [locate(prefix + ("checks", index, "role"),
                   f'Invalid value: "{check.role}": not a role of the set (roles: {", ".join(roles)})')
            for index, check in enumerate(analysis.checks) if check.role not in roles]


def _unknown(raw: Mapping[str, object], known: tuple[str, ...], path: FieldPath, report: _Report) -> None:
    for key in raw:
        if key not in known:
            report(path + (key,), f'unknown field "{key}"')


def _prometheus(raw: object, report: _Report) -> Prometheus | None:
    path: FieldPath = ("prometheus",)
    if not isinstance(raw, dict) or ("address" in raw) == ("service" in raw):
        report(path, "Invalid value: must name exactly one of address (a URL) or service "
                     "({namespace, name, port}, reached through the API server's service proxy)")
        return None
    _unknown(raw, ("address", "service"), path, report)
    if "address" in raw:
        address = raw["address"]
        error = _url_error(address)
        if error:
            report(path + ("address",), f'Invalid value: "{address}": {error}')
            return None
        return Prometheus(address=address.rstrip("/"))
    service = raw["service"]
    path += ("service",)
    if not isinstance(service, dict):
        report(path, "Invalid value: must be an object with namespace, name and port")
        return None
    _unknown(service, ("namespace", "name", "port"), path, report)
    ok = True
    namespace, name, port = service.get("namespace"), service.get("name"), service.get("port")
    for key, value, valid in (("namespace", namespace, isinstance(namespace, str) and apirules.is_namespace_name(namespace)),
                              ("name", name, isinstance(name, str) and len(name) <= 63
                               and bool(apirules.DNS1035_LABEL.fullmatch(name)))):
        if value is None:
            report(path + (key,), "Required value")
            ok = False
        elif not valid:
            report(path + (key,), f'Invalid value: "{value}": must be a lowercase RFC 1123 label')
            ok = False
    if port is None:
        report(path + ("port",), "Required value: a port number or name")
        ok = False
    elif isinstance(port, bool) or not (
            (isinstance(port, int) and 1 <= port <= 65535)
            or (isinstance(port, str) and apirules.iana_service_name_error(port) is None)):
        report(path + ("port",), f'Invalid value: "{port}": must be a port number (1-65535) or a port name')
        ok = False
    return Prometheus(namespace=namespace, service=name, port=port) if ok else None


def _url_error(address: object) -> str | None:
    if not isinstance(address, str):
        return "must be a URL such as http://prometheus.monitoring:9090"
    try:
        parts = urlsplit(address)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as error:
        return f"not a URL: {error}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http:// or https:// URL with a host, such as http://prometheus.monitoring:9090"
    if parts.query or parts.fragment or parts.username or parts.password:
        return ("must not carry a query, a fragment or credentials (a Service reached through the API "
                "server's proxy uses the kubeconfig's)")
    return None


def _check(raw: object, path: FieldPath, report: _Report) -> Check | None:
    if not isinstance(raw, dict):
        report(path, "Invalid value: must be an object")
        return None
    before = len(report.problems)
    _unknown(raw, _CHECK_FIELDS, path, report)
    name, role, query = raw.get("name"), raw.get("role"), raw.get("query")
    for key, value in (("name", name), ("role", role)):
        if value is None:
            report(path + (key,), "Required value")
        elif not isinstance(value, str) or len(value) > 63 or not apirules.DNS1123_LABEL.fullmatch(value):
            report(path + (key,), f'Invalid value: "{value}": must be a lowercase RFC 1123 label')
    if query is None:
        report(path + ("query",), "Required value: a PromQL expression")
    elif not isinstance(query, str) or not query.strip():
        report(path + ("query",), "Invalid value: must be a PromQL expression")
    else:
        error = query_error(query)
        if error:
            report(path + ("query",), error)
    condition = _condition(raw.get("successCondition"), path + ("successCondition",), report)
    interval = _interval(raw.get("interval", DEFAULT_INTERVAL), path + ("interval",), report)
    count = _integer(raw.get("count", DEFAULT_COUNT), 1, path + ("count",), report)
    limit = _integer(raw.get("failureLimit", DEFAULT_FAILURE_LIMIT), 0, path + ("failureLimit",), report)
    if count is not None and limit is not None and limit >= count:
        report(path + ("failureLimit",), f"Invalid value: {limit}: must be less than count ({count}), "
                                         "else the check could never fail")
    no_data = raw.get("noData", DEFAULT_NO_DATA)
    if no_data not in NO_DATA:
        report(path + ("noData",), f'Unsupported value: "{no_data}": supported values: "fail", "pass"')
    if len(report.problems) != before:
        return None
    # Each field's check above reported the field unless it holds a value of its type.
    assert isinstance(name, str) and isinstance(role, str) and isinstance(query, str) and condition is not None
    assert interval is not None and count is not None and limit is not None
    return Check(name, role, query, condition, interval, count, limit, no_data)


def _condition(raw: object, path: FieldPath, report: _Report) -> Condition | None:
    if raw is None:
        report(path, 'Required value: a comparison and a number, such as "< 0.5"')
        return None
    found = _CONDITION.fullmatch(raw) if isinstance(raw, str) else None
    if not found:
        report(path, f'Invalid value: "{raw}": must be a comparison (<, <=, >, >=, ==, !=) and a number, '
                     'such as "< 0.5"')
        return None
    return Condition(found.group(1), float(found.group(2)))


def _interval(raw: object, path: FieldPath, report: _Report) -> float | None:
    seconds, why = bounded(raw, MAX_INTERVAL_SECONDS)
    if why is not None:
        report(path, why)
    return seconds


def _integer(raw: object, least: int, path: FieldPath, report: _Report) -> int | None:
    if isinstance(raw, bool) or not isinstance(raw, int) or not least <= raw <= MAX_COUNT:
        report(path, f'Invalid value: "{raw}": must be a whole number from {least} to {MAX_COUNT}')
        return None
    return raw


# --- templating ------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Slot:
    start: int
    end: int
    name: str
    quote: str  # the string literal's quote: " or '
    regex: bool  # the literal is the value of a =~ or !~ matcher


def _slots(query: str) -> list[_Slot]:
    """Every placeholder with the string literal it stands in; ValueError for one standing
    anywhere else, or unknown."""
    literals = _string_literals(query)
    out = []
    for found in _PLACEHOLDER.finditer(query):
        name = found.group(1)
        if name not in PLACEHOLDERS:
            raise ValueError(f'unknown placeholder "{found.group()}": use '
                             + ", ".join("{{" + p + "}}" for p in PLACEHOLDERS))
        literal = next((lit for lit in literals if lit[0] < found.start() and found.end() <= lit[1]), None)
        if literal is None or literal[2] == "`":
            raise ValueError(f'"{found.group()}" must stand inside a quoted label value ("..." or \'...\'), '
                             "where it is quoted as one value")
        regex = bool(re.search(r"[=!]~\s*$", query[:literal[0]]))
        if name == "slices" and not regex:
            raise ValueError('"{{slices}}" is a regex alternation of slice indexes: match it with =~, '
                             'such as slice=~"{{slices}}"')
        out.append(_Slot(found.start(), found.end(), name, literal[2], regex))
    return out


def _string_literals(query: str) -> list[tuple[int, int, str]]:
    """(start, end, quote) of each string literal, as Prometheus's lexer finds them (comments skipped)."""
    out, i, n = [], 0, len(query)
    while i < n:
        c = query[i]
        if c == "#":
            while i < n and query[i] != "\n":
                i += 1
        elif c in "\"'`":
            j = i + 1
            while j < n and query[j] != c and not (c != "`" and query[j] == "\n"):
                j += 2 if c != "`" and query[j] == "\\" else 1
            out.append((i, j, c))
            i = j + 1
        else:
            i += 1
    return out


def quote_value(value: str, quote: str, regex: bool) -> str:
    """`value` as it must be written inside a PromQL string literal opened by `quote` to mean
    exactly `value` (a regex matching exactly `value` when `regex`)."""
    if regex:
        value = re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", value)
    out = []
    for char in value:
        if char in ("\\", quote):
            out.append("\\" + char)
        elif ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F or char in "\u2028\u2029":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def slices_alternation(slices: list[int]) -> str:
    """The admitted slice indexes as a regex alternation: 0|1|2."""
    return "|".join(str(index) for index in sorted(set(slices)))


def placeholder_values(set_name: str, namespace: str, revision: str, slices: range | list[int]) -> dict[str, str]:
    """What a gate's queries are filled with ({{role}} is each check's own)."""
    return {"set": set_name, "namespace": namespace, "revision": revision,
            "slices": slices_alternation(list(slices))}


def fill(query: str, values: dict[str, str]) -> str:
    """`query` with every placeholder replaced by its value, quoted for where it stands."""
    return _filled(query, values)[0]


def _filled(query: str, values: dict[str, str]) -> tuple[str, list[tuple[int, int]]]:
    """The filled query, and (offset in it, offset in `query`) where each stretch of `query` resumes."""
    out, last, shifts, length = [], 0, [(0, 0)], 0
    for slot in _slots(query):
        out.append(query[last:slot.start])
        value = values[slot.name]
        # slices is already the regex the placeholder means (digits and |): only string-quoted.
        out.append(quote_value(value, slot.quote, slot.regex and slot.name != "slices"))
        length += (slot.start - last) + len(out[-1])
        last = slot.end
        shifts.append((length, last))
    out.append(query[last:])
    return "".join(out), shifts


def _template_offset(shifts: list[tuple[int, int]], position: int) -> int:
    """Where an offset into the filled query falls in the template (inside a value: its placeholder's end)."""
    filled_at, template_at = max((shift for shift in shifts if shift[0] <= position), default=(0, 0))
    return template_at + (position - filled_at)


def query_error(query: str) -> str | None:
    """Why `query`, its placeholders filled, is no query for a check; None when it is one."""
    try:
        filled, shifts = _filled(query, _SAMPLE_VALUES)
    except ValueError as error:
        return f"Invalid value: {error}"
    try:
        parsed = promql.parse(filled)
    except promql.PromQLError as error:
        where = promql.position_text(query, _template_offset(shifts, error.position))
        return f"Invalid value: PromQL parse error at {where}: {error.message}"
    if parsed.type not in (promql.VECTOR, promql.SCALAR):
        return f"Invalid value: the query gives a {parsed.type}: a check compares an instant vector or a scalar"
    return None


# --- verdicts --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sample:
    value: float
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Measurement:
    """One query's answer at `at` (unix seconds): its samples, or the error that stood for it."""

    at: float
    samples: tuple[Sample, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class Judged:
    measurement: Measurement
    ok: bool
    why: str  # e.g. "0.82 is not < 0.5", "no data", "error: connection refused"


@dataclass(frozen=True)
class Verdict:
    check: Check
    phase: str  # passed | failed | running
    judged: tuple[Judged, ...] = field(default=())

    @property
    def failures(self) -> int:
        return sum(not j.ok for j in self.judged)

    @property
    def values(self) -> list[float]:
        """The values of the measurements that held (a missed one's values never read as holding)."""
        return [s.value for j in self.judged if j.ok for s in j.measurement.samples if not math.isnan(s.value)]

    @property
    def why(self) -> str:
        """The verdict in one line: 'ttft: 0.31 < 0.5 at 5 measurements', what held and what
        missed, or the failing values."""
        check, done = self.check, len(self.judged)
        if self.phase == FAILED:
            failing = "; ".join(j.why for j in self.judged if not j.ok)
            return (f"{check.name}: {self.failures} of {done} measurements failed (failureLimit "
                    f"{check.failure_limit}): {failing}")
        worst = self.worst()
        held = f"{_number(worst)} {check.condition}" if worst is not None else f"no data (noData: {check.no_data})"
        missed = "; ".join(j.why for j in self.judged if not j.ok)
        missed = f"; missed {self.failures} (failureLimit {check.failure_limit}): {missed}" if missed else ""
        if self.phase == PASSED:
            return f"{check.name}: {held} at {done - self.failures} of {done} measurements{missed}" if missed \
                else f"{check.name}: {held} at {done} measurements"
        return (f"{check.name}: {done} of {check.count} measurements, next in {format_duration(check.interval)}"
                + (f"; held {held}" if done > self.failures else "") + missed)

    def worst(self) -> float | None:
        """Of the measurements that held, the value nearest to failing the condition: the highest
        for < and <=, the lowest for > and >=."""
        values = self.values
        if not values:
            return None
        op = self.check.condition.op
        if op in ("<", "<="):
            return max(values)
        if op in (">", ">="):
            return min(values)
        return values[-1]


def judge_measurement(check: Check, measurement: Measurement) -> Judged:
    if measurement.error is not None:
        return Judged(measurement, False, f"error: {measurement.error}")
    # NaN is what a quantile of no requests gives: it counts as no data, not as a value.
    values = [s.value for s in measurement.samples if not math.isnan(s.value)]
    if not values:
        return Judged(measurement, check.no_data == "pass", "no data")
    failing = [v for v in values if not check.condition.holds(v)]
    if failing:
        return Judged(measurement, False, f"{_number(failing[0])} is not {check.condition}"
                      + (f" (and {len(failing) - 1} more samples)" if len(failing) > 1 else ""))
    return Judged(measurement, True, f"{_number(max(values) if check.condition.op in ('<', '<=') else min(values))} "
                                     f"{check.condition}")


def judge(check: Check, measurements: list[Measurement]) -> Verdict:
    """The verdict of `measurements` (in time order) against `check`: failed as soon as more than
    failureLimit measurements failed, passed once `count` are taken, running until then."""
    judged: list[Judged] = []
    for measurement in measurements[:check.count]:
        judged.append(judge_measurement(check, measurement))
        if sum(not j.ok for j in judged) > check.failure_limit:
            return Verdict(check, FAILED, tuple(judged))
    return Verdict(check, PASSED if len(judged) >= check.count else RUNNING, tuple(judged))


def gate_phase(verdicts: Iterable[Verdict]) -> str:
    """A gate's phase from its checks' verdicts: failed once one failed, passed once all passed."""
    phases = {verdict.phase for verdict in verdicts}
    if FAILED in phases:
        return FAILED
    return PASSED if phases == {PASSED} else RUNNING


def next_measurement_at(check: Check, measurements: list[Measurement], started: float) -> float:
    """When the next measurement is due: the first at once, then one every `interval`."""
    return started + len(measurements) * check.interval


def _number(value: float) -> str:
    return f"{value:.4g}"


def record(verdict: Verdict) -> JsonObject:
    """The verdict as the rollout state records it: the check, the outcome, every value and time."""
    check = verdict.check
    return {
        "check": check.name, "role": check.role, "phase": verdict.phase,
        "successCondition": str(check.condition), "count": check.count, "failureLimit": check.failure_limit,
        "message": verdict.why,
        "measurements": [_measurement_record(j) for j in verdict.judged],
    }


def gate_record(verdicts: list[Verdict] | tuple[Verdict, ...], phase: str, message: str) -> JsonObject:
    """A gate's verdict as the position records it (`phase` is what the wave decision reads)."""
    return {"phase": phase, "message": message, "checks": [record(verdict) for verdict in verdicts]}


def _measurement_record(judged: Judged) -> JsonObject:
    out: JsonObject = {"time": _rfc3339(judged.measurement.at), "ok": judged.ok}
    if judged.measurement.error is not None:
        out["error"] = judged.measurement.error
    else:
        out["values"] = [_json_number(s.value) for s in judged.measurement.samples]
    return out


def _json_number(value: float) -> float | str:
    return value if math.isfinite(value) else ("NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf"))


def _rfc3339(at: float) -> str:
    return datetime.datetime.fromtimestamp(round(at, 3), datetime.timezone.utc).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


# --- a recorded verdict, read back ------------------------------------------------------------
#
# A position is an input people edit (a state file in git, a RolloutState in the cluster), and a
# verdict in it opens the next wave. So a recorded verdict is one `run_gate` could have written:
# the gate's checks as the policy has them, each measurement judged again from its values (and
# its `ok` what that says), each check's and the gate's phase what the measurements give, and
# the times those of a run (the first measurements at once, then one every interval, none before
# the wave completed).

SCHEDULE_SLACK_SECONDS = 1.0  # a measurement's recorded time may read this much before it was due
CLOCK_SKEW_SECONDS = 300.0  # ... and the run this much before the wave's completion (another machine's clock)
_SPECIAL_VALUES = {"NaN": math.nan, "+Inf": math.inf, "-Inf": -math.inf}

Found = list[tuple[FieldPath, str]]  # (field path, message) pairs


def recorded_verdict_problems(position: Position | None, revision: str, waves: Iterable[ResolvedWave],
                              model: object) -> Found:
    """Why the verdicts of `position` (core.delivery.position.Position) are not what analysis runs wrote
    for the rollout to `revision`, under `waves` (the policy's resolved waves: each `index` and
    the `analysis` check names of its gate) and `model` (the policy's Analysis): (path under
    the position, message) pairs, none when every verdict is one. A position of another rollout
    is not read for its verdicts, so not checked either."""
    if position is None or position.revision != revision or not isinstance(model, Analysis):
        return []
    gates = {wave.index: wave.analysis for wave in waves}
    out: Found = []
    for wave, record in sorted(position.verdicts.items()):
        where = ("verdicts", str(wave))
        names = gates.get(wave)
        if not names:
            out.append((where, f"wave {wave + 1} has no analysis gate in the RolloutPolicy, so no analysis ran "
                               "after it (edited by hand?)"))
            continue
        completed = _time(position.completed.get(wave))
        if completed is None:
            out.append((where, f"wave {wave + 1} is not recorded as completed, and its analysis runs only once it "
                               "is (edited by hand?)"))
            continue
        checks = [model.check(name) for name in names if name in model.names]
        out += [(where + path, message) for path, message in verdict_problems(record, checks, completed)]
    return out


def verdict_problems(record: object, checks: list[Check], completed: float | None = None) -> Found:
    """Why `record` (a gate's verdict as `gate_record` wrote it) is not one `run_gate` could have
    written for `checks` (the gate's, as the policy has them), after the wave completed at
    `completed` (unix seconds; None: unknown): (path in the record, message) pairs."""
    if not isinstance(record, dict):
        return [((), "must be a recorded verdict: phase, message and checks with their measurements")]
    out: Found = []
    phase = record.get("phase")
    if phase not in (PASSED, FAILED):
        out.append((("phase",), f'must be "passed" or "failed", got {phase!r}'))
    names = [check.name for check in checks]
    raw = record.get("checks")
    recorded = [entry.get("check") if isinstance(entry, dict) else None for entry in raw] \
        if isinstance(raw, list) else None
    if recorded != names:
        got = "none" if not recorded else ", ".join(str(name) for name in recorded)
        return out + [(("checks",), f"must record the gate's checks ({', '.join(names)}), each with every "
                                    f"measurement, in that order; records {got} (edited by hand?)")]
    assert isinstance(raw, list)  # it records the gate's checks: a list
    verdicts: list[Verdict] = []
    times: list[list[float]] = []
    for index, (check, entry) in enumerate(zip(checks, raw)):
        found, verdict, at = _check_record(check, entry, ("checks", index))
        out += found
        if verdict is not None:  # None only with a problem found, so no verdict is judged
            verdicts.append(verdict)
        times.append(at)
    if out:
        return out
    out += _schedule_problems(checks, times, completed)
    judged = gate_phase(verdicts)
    if phase != judged:
        out.append((("phase",), f"says {phase}, but its measurements give {judged} (edited by hand?)"))
    return out


def _check_record(check: Check, entry: JsonObject, path: FieldPath) -> tuple[Found, Verdict | None, list[float]]:
    """One check's record against the policy's `check`: the problems, its verdict judged again, its times."""
    out: Found = []
    for key, expected in (("role", check.role), ("successCondition", str(check.condition)),
                          ("count", check.count), ("failureLimit", check.failure_limit)):
        if entry.get(key) != expected:
            out.append((path + (key,), f"is {entry.get(key)!r}, but the RolloutPolicy's check {check.name} has "
                                       f"{expected!r} (the policy changed since, or the state was edited by hand)"))
    raw = entry.get("measurements")
    if not isinstance(raw, list):
        return out + [(path + ("measurements",), "must list every measurement (time, ok, values or error)")], None, []
    measurements, claims = [], []
    for index, item in enumerate(raw):
        parsed = _measurement_of(item)
        if isinstance(parsed, str):
            out.append((path + ("measurements", index), parsed))
        else:
            measurements.append(parsed)
            claims.append(item["ok"])
    if out:
        return out, None, []
    verdict = judge(check, measurements)
    if len(verdict.judged) < len(measurements):
        out.append((path + ("measurements", len(verdict.judged)),
                    f"comes after the check's verdict ({verdict.phase} after {len(verdict.judged)} "
                    f"measurements, count {check.count}, failureLimit {check.failure_limit}): a run takes no more"))
    for index, (judged, ok) in enumerate(zip(verdict.judged, claims)):
        if judged.ok != ok:
            out.append((path + ("measurements", index, "ok"),
                        f"says {'true' if ok else 'false'}, but {judged.why} (against {check.condition}, noData "
                        f"{check.no_data}): the measurement {'missed' if ok else 'held'}"))
    if entry.get("phase") != verdict.phase:
        out.append((path + ("phase",), f"says {entry.get('phase')}, but its {len(measurements)} measurements give "
                                       f"{verdict.phase} (count {check.count}, failureLimit {check.failure_limit})"))
    return out, verdict, [m.at for m in measurements]


def _measurement_of(item: object) -> Measurement | str:
    """A recorded measurement (see `_measurement_record`), or why it is not one."""
    if not isinstance(item, dict) or not isinstance(item.get("ok"), bool):
        return "must be a measurement: time, ok (true or false), and values or error"
    at = _time(item.get("time"))
    if at is None:
        return f"time: must be an RFC 3339 time, got {item.get('time')!r}"
    if ("values" in item) == ("error" in item):
        return "must have either values (the samples) or error (what stood for them)"
    if "error" in item:
        error = item["error"]
        return Measurement(at, error=error) if isinstance(error, str) and error else "error: must be a message"
    values = item["values"]
    if not isinstance(values, list):
        return "values: must be a list of numbers"
    samples = []
    for value in values:
        if isinstance(value, str) and value in _SPECIAL_VALUES:
            samples.append(Sample(_SPECIAL_VALUES[value]))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            samples.append(Sample(float(value)))
        else:
            return f'values: {value!r} is not a number (nor "NaN", "+Inf" or "-Inf")'
    return Measurement(at, tuple(samples))


def _schedule_problems(checks: list[Check], times: list[list[float]], completed: float | None) -> Found:
    """Times no run takes: before the wave completed, out of order, or before they were due."""
    firsts = [at[0] for at in times if at]
    if not firsts:
        return []
    start = min(firsts)
    out: Found = []
    if completed is not None and start < completed - CLOCK_SKEW_SECONDS:
        out.append((("checks",), f"the first measurement ({_rfc3339(start)}) is from before the wave completed "
                                 f"({_rfc3339(completed)}): an analysis runs after (edited by hand?)"))
    for index, (check, at) in enumerate(zip(checks, times)):
        for n, moment in enumerate(at):
            due = start + n * check.interval
            if moment < due - SCHEDULE_SLACK_SECONDS or (n and moment < at[n - 1]):
                out.append((("checks", index, "measurements", n, "time"),
                            f"{_rfc3339(moment)} is before measurement {n + 1} was due ({_rfc3339(due)}: one every "
                            f"{format_duration(check.interval)} from the first, {_rfc3339(start)}) (edited by hand?)"))
                break
    return out


def _time(text: object) -> float | None:
    """Unix seconds of an RFC 3339 time in UTC (`Z`), or None."""
    if not isinstance(text, str) or not text.endswith("Z"):
        return None
    try:
        return datetime.datetime.fromisoformat(text[:-1] + "+00:00").timestamp()
    except ValueError:
        return None
