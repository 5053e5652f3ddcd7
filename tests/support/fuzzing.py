"""The fuzz campaign's harness: mutated inputs through the whole CLI, and the property they must hold.

Inputs start from examples/*.yaml and are mutated two ways: as bytes (flips, cuts, splices, YAML
syntax and tags dropped in) and as documents (a value anywhere replaced, removed or joined by an
unknown field, then written as YAML or JSON). Each goes through `render` (YAML and JSON) and
`validate` in-process. The property:

- the command ends in exit 0 (a render) or exit 1 (our own error), never an exception;
- exit 1 prints nothing on stdout and only `FILE[:LINE]: …` lines on stderr, no traceback;
- exit 0 prints output that parses, in the format asked for.

`rendered_objects` gives what a successful render produced, for the server-side dry-run sample
(tests/integration/test_fuzz_server.py): nothing we exit 0 on may be refused by the API server.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections import Counter
from pathlib import Path

import yaml
from hypothesis import strategies as st

from kubectl_disagg.cli import main
from kubectl_disagg.core.api import naming, revision
from kubectl_disagg.manifests.writer import to_yaml
from tests.support.paths import EXAMPLES

SEEDS = [path.read_bytes() for path in sorted(EXAMPLES.glob("*.yaml"))]
SEED_DOCUMENTS = [yaml.safe_load(seed) for seed in SEEDS]
# How many inputs a campaign runs per strategy: a few dozen in the default suite, thousands in `make fuzz`.
EXAMPLES_PER_STRATEGY = int(os.environ.get("KUBECTL_DISAGG_FUZZ_EXAMPLES", "40"))
# Figures of the current run, printed by the tests when the campaign ends.
FIGURES: Counter = Counter()

_TOKENS = [b"!!bool ", b"!!int ", b"!!float ", b"!!null ", b"!!binary ", b"!!set ", b"!!omap ", b"!foo ",
           b"!!timestamp ", b"&a ", b"*a", b"<<: ", b"{", b"}", b"[", b"]", b"---\n", b"...\n", b": ", b"- ",
           b'"', b"'", b"#", b"\t", b"~", b"null", b".inf", b".nan", b"1e400", b"0x1F", b"? ", b"|\n", b">\n",
           b"\\u0000", b"\xef\xbb\xbf", b"\x00", b"\xff", b"\n  ", b"yes", b"-1", b"99999999999999999999", b"%YAML 1.2\n"]

_FIELD_NAMES = ["replicas", "replcas", "size", "slices", "roles", "name", "image", "resources", "limits", "requests",
                "ports", "containerPort", "protocol", "labels", "annotations", "metadata", "spec", "containers",
                "workerTemplate", "leaderTemplate", "volumeClaimTemplates", "env", "nvidia.com/gpu", "cpu",
                "rolloutStrategy", "maxSurge", "maxUnavailable", "partition", "placementPolicy", "topology",
                "scaling", "mode", "subGroupPolicy", "restartPolicy", "x", ""]

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
    st.sampled_from(["1", "500m", "1.5Gi", "lots", "-1", "TCP", "HTTP", "Always", "ExclusiveSlice", "25%", "x" * 70,
                     "a b", "Invalid_Label-", "example.com/x", "RollingUpdate", "External", "Static", ""]),
)
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(_FIELD_NAMES), inner, max_size=3)), max_leaves=8)


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, prefix + (key,)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(_paths(item, prefix + (index,)))
    return out


def _replace(value: object, path: tuple, new: object, delete: bool) -> object:
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    if rest:
        copy[head] = _replace(copy[head], rest, new, delete)
    elif delete:
        del copy[head]
    else:
        copy[head] = new
    return copy


@st.composite
def mutated_documents(draw) -> bytes:
    """A seed document with one to three values replaced, removed or given an unknown sibling."""
    document = draw(st.sampled_from(SEED_DOCUMENTS))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(document)
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete" and path:
            document = _replace(document, path, None, delete=True)
        elif action == "add":
            target = path if isinstance(_get(document, path), dict) else path[:-1]
            if isinstance(_get(document, target), dict):
                document = _replace(document, target + (draw(st.sampled_from(_FIELD_NAMES)),), draw(_values), False)
        else:
            document = _replace(document, path, draw(_values), delete=False)
    if draw(st.booleans()):
        return json.dumps(document).encode()
    return to_yaml(document).encode()


_TYPE_FIELD_NAMES = sorted({name for struct in revision.read_table()["structs"].values() for name, *_ in struct if name})


@st.composite
def mutated_templates(draw) -> bytes:
    """A seed with one value inside a role's LWS spec replaced, or a real Kubernetes field name
    added with a plausible value: inputs close to valid, where render's acceptance is tested."""
    document = draw(st.sampled_from(SEED_DOCUMENTS))
    paths = [p for p in _paths(document) if "leaderWorkerTemplate" in p or p[-1:] == ("metadata",)]
    path = draw(st.sampled_from(paths))
    if isinstance(_get(document, path), dict) and draw(st.booleans()):
        name = draw(st.sampled_from(_TYPE_FIELD_NAMES + ["labels", "annotations"]))
        value = draw(st.one_of(_scalars, st.dictionaries(st.sampled_from(_FIELD_NAMES + _TYPE_FIELD_NAMES[:50]),
                                                         _scalars, max_size=2)))
        document = _replace(document, path + (name,), value, delete=False)
    else:
        document = _replace(document, path, draw(_scalars), delete=False)
    return to_yaml(document).encode()


def _get(value: object, path: tuple) -> object:
    for part in path:
        value = value[part]
    return value


@st.composite
def mutated_bytes(draw) -> bytes:
    """A seed file with one to four byte-level mutations."""
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        position = draw(st.integers(min_value=0, max_value=len(data)))
        operation = draw(st.sampled_from(["flip", "insert", "token", "delete", "splice", "duplicate"]))
        if operation == "flip" and position < len(data):
            data[position] = draw(st.integers(min_value=0, max_value=255))
        elif operation == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=8))
        elif operation == "token":
            data[position:position] = draw(st.sampled_from(_TOKENS))
        elif operation == "delete":
            del data[position:position + draw(st.integers(min_value=1, max_value=40))]
        elif operation == "splice":
            other = draw(st.sampled_from(SEEDS))
            start = draw(st.integers(min_value=0, max_value=len(other)))
            data[position:position] = other[start:start + draw(st.integers(min_value=1, max_value=200))]
        else:
            length = draw(st.integers(min_value=1, max_value=80))
            data[position:position] = data[position:position + length]
    return bytes(data)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """The CLI in-process, as `kubectl-disagg ARGV` runs: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
        except SystemExit as exited:
            code = exited.code
        else:
            raise AssertionError("main() returned instead of exiting")
    return code, out.getvalue(), err.getvalue()


def check_input(data: bytes, directory: Path) -> list[str]:
    """Run one input through render (YAML, JSON) and validate; assert the property; return the
    YAML render's stdout (empty unless it exited 0)."""
    path = directory / "input.yaml"
    path.write_bytes(data)
    FIGURES["inputs"] += 1
    rendered = ""
    outputs = {}
    for argv, fmt in ((["render", "-f", str(path)], "yaml"), (["render", "-f", str(path), "-o", "json"], "json"),
                      (["validate", "-f", str(path)], "text")):
        code, out, err = run_cli(argv)
        FIGURES[f"{argv[0]} {fmt} exit {code}"] += 1
        assert "Traceback" not in err, err
        if code == 1:
            assert out == "", f"{argv}: exit 1 with output on stdout:\n{out[:500]}"
            lines = err.splitlines()
            assert lines and all(line.startswith(str(path)) or line.startswith("Warning: ") for line in lines), err
        else:
            assert code == 0, f"{argv}: exit {code}\n{err}"
            if fmt == "yaml":
                outputs[fmt] = [doc for doc in yaml.safe_load_all(out)]
                rendered = out
            elif fmt == "json":
                parsed = json.loads(out)
                outputs[fmt] = parsed["items"] if parsed.get("kind") == "List" and "items" in parsed else [parsed]
    if len(outputs) == 2:
        # The two formats say the same thing: a YAML reader gets back exactly what the JSON holds.
        assert outputs["yaml"] == outputs["json"], "render -o yaml and -o json differ once read back"
    return rendered


def rendered_objects(output: str) -> list[dict]:
    """The objects render made (not documents it passed through unchanged)."""
    return [obj for obj in yaml.safe_load_all(output) if isinstance(obj, dict)
            and ((obj.get("metadata") or {}).get("labels") or {}).get(naming.MANAGED_BY_LABEL) == naming.MANAGER]


# --- RolloutPolicy documents (issue 37) -------------------------------------------------------

POLICY_SET = next(d for d in SEED_DOCUMENTS if d.get("kind") == naming.SET_KIND and d["spec"].get("slices", 1) > 1)
_GOOD_DURATIONS = ["15m", "1h30m", "720h", "24h", "1.5h", "90", "500ms", "2s"]
_BAD_DURATIONS = ["721h", "25h", "876000000h", "9" * 400 + "s", "1\u0661m", "0s", "-1m", "", "1h 2m", "2562047h",
                  "2562048h", "1e3s", 10**20, -1, 1.5, float("nan"), None]
_GOOD_COUNTS = [1, 2, 3, "25%", "50%", "100%"]
_BAD_COUNTS = [0, -2, 2000, "101%", "0%", "05%", "%", "x", True, None, 1.5]
_CHECK = {"name": "ttft", "role": "prefill", "query": 'up{revision="{{revision}}"}', "successCondition": "> 0"}


def _either(draw, good, bad, hostile: bool = True):
    """Mostly a value the validator accepts, one time in six a hostile one (never one when not
    `hostile`)."""
    return draw(st.sampled_from(bad if hostile and draw(st.integers(min_value=0, max_value=5)) == 5 else good))


@st.composite
def _checks(draw, hostile: bool = True) -> list:
    checks = []
    for name in ("ttft", "tpot")[:draw(st.integers(min_value=0, max_value=2))]:
        check = dict(_CHECK, name=_either(draw, [name], ["Bad_Name", ""], hostile),
                     noData=draw(st.sampled_from(["fail", "pass"])))
        check["interval"] = _either(draw, ["10ms", "50ms"], _GOOD_DURATIONS + _BAD_DURATIONS, hostile)
        check["count"] = _either(draw, [1, 2], [0, 1001, "2", None], hostile)
        check["failureLimit"] = _either(draw, [0], [1, 5, -1], hostile)
        check["role"] = _either(draw, ["prefill", "decode"], ["nope"], hostile)
        check["successCondition"] = _either(draw, ["> 0", "< 0.5"], ["~ 1", ""], hostile)
        checks.append(check)
    return checks


@st.composite
def _waves(draw, names: list[str], hostile: bool = True) -> list:
    waves = []
    percent = draw(st.booleans())
    for index in range(draw(st.integers(min_value=0, max_value=4))):
        wave: dict = {"slices": _either(draw, [f"{25 * (index + 1)}%" if percent else index + 1], _BAD_COUNTS,
                                        hostile)}
        pause = draw(st.integers(min_value=0, max_value=3))
        if pause == 1:
            wave["pause"] = {}
        elif pause == 2:
            wave["pause"] = {"duration": _either(draw, _GOOD_DURATIONS, _BAD_DURATIONS, hostile)}
        elif pause == 3 and hostile and draw(st.integers(min_value=0, max_value=5)) == 5:
            wave["pause"] = draw(_values)
        if names and draw(st.booleans()):
            wave["analysis"] = draw(st.lists(st.sampled_from(names * 3 + (["unknown"] if hostile else [])),
                                             max_size=2, unique=True))
        waves.append(wave)
    return waves


@st.composite
def policy_objects(draw, hostile: bool = True) -> dict:
    """A RolloutPolicy for POLICY_SET, every field drawn from plausible values and, when
    `hostile`, one time in six from hostile ones: apiVersion, durations, percentages, counts,
    checks, onFailure, maxSlicesInFlight, waves, targetRef (issue 37's probe). Not `hostile`:
    a policy the validator accepts (the property test of progressive rollouts draws those)."""
    ds = POLICY_SET
    namespace = ds["metadata"].get("namespace")
    metadata = {"name": "policy", "namespace": _either(draw, [namespace], ["other", "Bad_NS", None], hostile)}
    spec: dict = {"targetRef": {"name": _either(draw, [ds["metadata"]["name"]], ["other", "", 7], hostile)}}
    checks = draw(_checks(hostile))
    if checks:
        spec["analysis"] = {"prometheus": {"address": _either(draw, ["http://127.0.0.1:9"], ["ftp://x", ""],
                                                              hostile)},
                            "checks": checks}
    spec["waves"] = draw(_waves([c["name"] for c in checks], hostile))
    spec["maxSlicesInFlight"] = _either(draw, _GOOD_COUNTS + [None], _BAD_COUNTS, hostile)
    spec["onFailure"] = _either(draw, ["abort", "pause"], ["retry", None], hostile)
    if hostile and draw(st.integers(min_value=0, max_value=5)) == 5:
        spec[draw(st.sampled_from(_FIELD_NAMES))] = draw(_values)
    api_version = _either(draw, [naming.PLUGIN_API_VERSION], [f"{naming.PLUGIN_GROUP}/v1beta1",
                                                              f"{naming.PLUGIN_GROUP}/v1", naming.PLUGIN_GROUP],
                          hostile)
    kind = _either(draw, [naming.POLICY_KIND], ["RolloutPolcy", naming.STATE_KIND], hostile)
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata,
            "spec": {key: value for key, value in spec.items() if value is not None}}


@st.composite
def policy_documents(draw) -> bytes:
    """A seed set with a RolloutPolicy beside it (`policy_objects`, hostile)."""
    return (to_yaml(POLICY_SET) + "---\n" + to_yaml(draw(policy_objects()))).encode()


def check_policy_input(data: bytes, directory: Path) -> bool:
    """One set and its policy through validate, render and rollout plan (no cluster: its
    kubeconfig message is the only line that may name no input file), then, when accepted, the
    wave decisions of a whole rollout with every soak run out (a year on) and every pause
    promoted; an accepted policy is always the set's (never ignored). Asserts the property;
    True when the input was accepted."""
    path = directory / "input.yaml"
    path.write_bytes(data)
    FIGURES["policy inputs"] += 1
    accepted = None
    for argv in (["validate", "-f", str(path)], ["render", "-f", str(path)],
                 ["rollout", "plan", "-f", str(path), "--kubeconfig", str(directory / "none")]):
        code, out, err = run_cli(argv)
        FIGURES[f"policy {argv[0]} exit {code}"] += 1
        assert "Traceback" not in err, err
        if argv[0] == "validate":
            accepted = code == 0
        if code != 0 or argv[0] == "rollout":
            assert code == 1, f"{argv}: exit {code}\n{err}"
            lines = [line for line in err.splitlines() if not line.startswith("Warning: ")]
            if accepted and argv[0] == "rollout":
                assert lines and all("kubeconfig" in line for line in lines), err
            else:
                assert out == "" and lines and all(line.startswith(str(path)) for line in lines), err
    if accepted:
        _decide_to_the_end(path)
    return accepted


def _decide_to_the_end(path: Path) -> None:
    """The core's wave decisions for the accepted policy, gate after gate, to the end."""
    import datetime

    from kubectl_disagg.core.delivery.position import Position
    from kubectl_disagg.core.delivery.waves import Progress, State, decide, promote
    from kubectl_disagg.gitops import directory

    ds = directory.read([str(path)], states=False).sets[0].ds
    assert ds.policy is not None, "a policy accepted beside its set was not read: its rollout is one big bang"
    now = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
    position = Position("r2", "r1")
    for _ in range(2 * ds.slices + 4):
        decision = decide(ds.policy, "r2", position, (Progress.DONE,) * ds.slices, now)
        if decision.state == State.COMPLETE:
            return
        now += datetime.timedelta(days=365)
        position = promote(decision, now, "fuzz", full=True, skip_analysis=True) if decision.state == State.AT_GATE \
            else decision.position
    raise AssertionError(f"the rollout of {path} did not end")
