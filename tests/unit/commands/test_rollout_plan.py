"""`kubectl disagg rollout plan` from flags and files: output formats and input errors, through main()."""

from __future__ import annotations

import json

import pytest
import yaml

from kubectl_disagg.cli import main
from tests.support.paths import EXAMPLES

WORKED_CHECK = ["--from", "5,2", "--to", "5,2", "--max-surge", "2", "--max-unavailable", "1"]


def run(capsys, *args: str, options=None) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["rollout", "plan", *args], options)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def test_json_is_exactly_roles_and_steps(capsys):
    code, out, err = run(capsys, *WORKED_CHECK, "--roles", "prefill,decode", "-o", "json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "roles": ["prefill", "decode"],
        "steps": [
            {"old": [5, 2], "new": [0, 0]},
            {"old": [5, 2], "new": [2, 1]},
            {"old": [4, 2], "new": [2, 1]},
            {"old": [3, 2], "new": [4, 2]},
            {"old": [2, 1], "new": [4, 2]},
            {"old": [2, 1], "new": [5, 2]},
            {"old": [0, 0], "new": [5, 2]},
        ],
    }


def test_yaml_matches_json(capsys):
    _, as_json, _ = run(capsys, "--from", "3,5", "--to", "5,3", "-o", "json")
    code, as_yaml, _ = run(capsys, "--from", "3,5", "--to", "5,3", "-o", "yaml")
    assert code == 0
    assert yaml.safe_load(as_yaml) == json.loads(as_json)


def test_yaml_quotes_role_names_that_yaml_1_1_reads_as_booleans(capsys):
    code, out, _ = run(capsys, "--from", "1,1,1", "--roles", "y,n,on", "-o", "yaml")
    assert code == 0
    assert out.startswith('roles:\n- "y"\n- "n"\n- "on"\n')  # go-yaml v2 would read bare y/n as booleans
    assert yaml.safe_load(out)["roles"] == ["y", "n", "on"]


def test_defaults_surge_one_unavailable_zero_to_equal_from_and_numbered_roles(capsys):
    _, out, _ = run(capsys, "--from", "3,3", "-o", "json")
    document = json.loads(out)
    assert document["roles"] == ["role-0", "role-1"]
    # The equal-sizes surge-1 trajectory (derived in test_planner.py).
    assert [(s["old"], s["new"]) for s in document["steps"]] == [
        ([3, 3], [0, 0]), ([3, 3], [1, 1]), ([2, 2], [1, 1]), ([2, 2], [2, 2]),
        ([1, 1], [2, 2]), ([1, 1], [3, 3]), ([0, 0], [3, 3]),
    ]


def test_per_role_surge_and_unavailable_lists(capsys):
    # prefill 0/1 and decode 1/0: one drain+scale step (see test_per_role_configs_differ).
    _, out, _ = run(capsys, "--from", "1,1", "--max-surge", "0,1", "--max-unavailable", "1,0", "-o", "json")
    assert json.loads(out)["steps"] == [{"old": [1, 1], "new": [0, 0]}, {"old": [0, 0], "new": [1, 1]}]


def test_table(capsys):
    code, out, err = run(capsys, *WORKED_CHECK, "--roles", "prefill,decode")
    assert (code, err) == (0, "")
    assert out == (
        "Roles prefill,decode from 5,2 to 5,2 (max surge 2,2; max unavailable 1,1): 6 steps (the DisaggregatedSet "
        "controller's planner)\n"
        "\n"
        "STEP  KIND                OLD  NEW  TOTAL (OLD+NEW/TARGET+SURGE)\n"
        "   0  initial             5,2  0,0  prefill 5/7  decode 2/4\n"
        "   1  scale up            5,2  2,1  prefill 7/7  decode 3/4\n"
        "   2  proportional drain  4,2  2,1  prefill 6/7  decode 3/4\n"
        "   3  drain+scale         3,2  4,2  prefill 7/7  decode 4/4\n"
        "   4  proportional drain  2,1  4,2  prefill 6/7  decode 3/4\n"
        "   5  scale up            2,1  5,2  prefill 7/7  decode 3/4\n"
        "   6  final drain         0,0  5,2  prefill 5/7  decode 2/4\n"
    )


def test_table_aligns_columns_of_varying_width(capsys):
    _, out, _ = run(capsys, "--from", "10,1", "--roles", "prefill,decode")
    lines = out.splitlines()
    table = lines[2:]
    assert lines[0].endswith(": 20 steps (the DisaggregatedSet controller's planner)")
    # Every column starts at the same offset on every row, and no row has trailing spaces.
    header = table[0]
    for column in ("KIND", "OLD", "NEW", "TOTAL"):
        offset = header.index(column)
        assert all(row[offset - 2:offset] == "  " and row[offset] != " " for row in table), column
    decode_offset = table[1].index("decode")
    assert all(row.index("decode") == decode_offset for row in table[1:])
    assert all(row == row.rstrip() for row in lines)
    assert table[-1].split()[:4] == ["20", "final", "drain", "0,0"]
    assert "prefill 11/11  decode 2/2" in table[2]


def test_a_plan_with_nothing_to_do_prints_the_initial_state(capsys):
    code, out, _ = run(capsys, "--from", "0,0", "-o", "json")
    assert code == 0
    assert json.loads(out)["steps"] == [{"old": [0, 0], "new": [0, 0]}]
    _, table, _ = run(capsys, "--from", "0,0")
    assert ": 0 steps" in table.splitlines()[0]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--from", "x,2"], '--from: "x" is not a non-negative integer'),
        (["--from", "5,-1"], '--from: "-1" is not a non-negative integer'),
        (["--from", "5,2.5"], '--from: "2.5" is not a non-negative integer'),
        (["--from", "5,,2"], '--from: "" is not a non-negative integer'),
        (["--from", "5,2", "--to", "5"], "--to: 1 value given; expected 2, one per role as in --from"),
        (["--from", "5,2", "--to", "5,2,1"], "--to: 3 values given; expected 2, one per role as in --from"),
        (["--from", "5,2", "--to", "5,x"], '--to: "x" is not a non-negative integer'),
        (["--from", ",".join(["1"] * 11)], "--from: 11 roles given; a plan takes 1 to 10"),
        (["--from", "5,2", "--max-surge", "1,1,1"],
         "--max-surge: 3 values given; expected 1 for every role or 2, one per role as in --from"),
        (["--from", "5,2", "--max-unavailable", "-1"],
         '--max-unavailable: "-1" is not a non-negative integer'),
        (["--from", "5,2", "--max-surge", "25%"], '--max-surge: "25%" is not a non-negative integer'),
        (["--from", "5,2", "--max-surge", "1,0", "--roles", "prefill,decode"],
         '--max-surge/--max-unavailable: role "decode" has both 0; at least one must be positive'),
        (["--from", "5,2", "--roles", "prefill"],
         "--roles: 1 name given; expected 2, one per role as in --from"),
        (["--from", "5,2", "--roles", "prefill,prefill"], '--roles: duplicate role name "prefill"'),
        (["--from", "5,2", "--roles", "prefill,"], "--roles: role names must not be empty"),
    ],
)
def test_bad_input_names_the_flag_and_prints_nothing_on_stdout(capsys, args, message):
    code, out, err = run(capsys, *args)
    assert code == 1
    assert out == ""
    assert message in err
    assert "Traceback" not in err


def test_every_problem_is_reported_at_once(capsys):
    code, out, err = run(capsys, "--from", "5,2", "--to", "x", "--max-surge", "1,2,3", "--roles", "a")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        '--to: "x" is not a non-negative integer',
        "--max-surge: 3 values given; expected 1 for every role or 2, one per role as in --from",
        "--roles: 1 name given; expected 2, one per role as in --from",
    ]


def test_from_is_required(capsys):
    code, out, err = run(capsys)
    assert code == 2 and out == ""
    assert "--from" in err


def test_unknown_output_format_is_a_usage_error(capsys):
    code, out, _ = run(capsys, "--from", "1,1", "-o", "xml")
    assert code == 2 and out == ""


def test_document_mode_takes_targets_and_budgets_from_the_set(capsys):
    # percent-rollout: prefill 10 (25% -> surge 3, 10% -> unavailable 1), decode 4 (surge 1, 0).
    example = str(EXAMPLES / "percent-rollout.yaml")
    code, out, err = run(capsys, "-f", example, "--from", "10,4", "-o", "json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["roles"] == ["prefill", "decode"]
    assert document["steps"][0] == {"old": [10, 4], "new": [0, 0]}
    assert document["steps"][1] == {"old": [10, 4], "new": [3, 1]}
    assert document["steps"][-1] == {"old": [0, 0], "new": [10, 4]}


def test_document_mode_checks_from_against_the_roles(capsys):
    code, out, err = run(capsys, "-f", str(EXAMPLES / "percent-rollout.yaml"), "--from", "10")
    assert (code, out) == (1, "")
    assert "--from: 1 value given; disaggregatedset/mixtral has 2 roles (prefill,decode)" in err


def test_document_mode_refuses_flags_the_document_answers(capsys):
    code, out, err = run(capsys, "-f", str(EXAMPLES / "percent-rollout.yaml"), "--from", "10,4", "--max-surge", "2")
    assert (code, out) == (2, "") and "--max-surge" in err


# --- a live set under a RolloutPolicy: the fleet (issue 39) ------------------------------------


def live_fleet(tmp_path):
    """The set and its policy in files, the fleet at the canary's gate in an in-memory cluster
    whose RolloutState records it: `rollout plan -f DIR` reads that cluster (the options)."""
    from kubectl_disagg.core.delivery.sets import load_sets
    from kubectl_disagg.manifests.reader import parse_stream
    from kubectl_disagg.rollout.progressive import state_object
    from tests.fakes.cluster import MemoryCluster
    from tests.fakes.paced import PacedCluster
    from tests.support.cli import on
    from tests.support.policy import POLICY, SET
    from tests.support.waves import until_held

    (tmp_path / "ds.yaml").write_text(SET.replace("img:1", "img:2").replace("replicas: 1", "replicas: 2", 1))
    (tmp_path / "policy.yaml").write_text(POLICY)
    old = load_sets(parse_stream(SET.replace("replicas: 1", "replicas: 2", 1), "ds.yaml"))[0]
    (ds,) = load_sets(parse_stream((tmp_path / "ds.yaml").read_text() + POLICY, "ds.yaml"))
    memory = MemoryCluster("serving")
    from kubectl_disagg.core.controller.render import render_set
    for obj in render_set(old, "serving"):
        memory.add(obj)
    memory.settle()
    at_gate = until_held(ds, memory, None).decision
    stored = state_object(ds, "serving", at_gate.position, at_gate, {"metadata": {"resourceVersion": "1"}})

    cluster = PacedCluster(memory)
    cluster.state = stored
    return old, ds, on(cluster)


def test_issue39_live_plan_of_a_paced_set_is_its_fleet(tmp_path, capsys):
    old, ds, options = live_fleet(tmp_path)
    code, out, err = run(capsys, "-f", str(tmp_path), options=options)
    assert (code, err) == (0, "")
    assert out.splitlines()[:9] == [
        f"disaggregatedset/llama: rollout to revision {ds.revision[:8]} from {old.revision[:8]} (every role's groups "
        "are replaced, whichever role's template changed)",
        "  3 waves, at most 2 slices in flight; now: wave 1 of 3 is done and waits at its gate (pause)",
        "  WAVE  SLICES      STEPS EACH  PASSES  GATES AFTER IT",
        f"     1  slice 0     4           done    a pause until `kubectl disagg rollout promote -f {tmp_path}`",
        "     2  slice 1     4           1-6     analysis ttft, then a 15m soak",
        "     3  slices 2-3  4           7-12    -",
        f"  slice 0: done at {ds.revision[:8]} (prefill 2, decode 1), wave 1",
        f"  slice 1: held at {old.revision[:8]} (prefill 2, decode 1), wave 2",
        f"  slices 2-3: held at {old.revision[:8]} (prefill 2, decode 1), wave 3",
    ]
    assert "no rollout under way" not in out
    # 13 commits (issue 47: 12 before): the step that passes wave 2's soak commits wave 3's starts
    # alone, as tests/unit/gitops/test_plan_commits.py counts on a repository
    assert "  to the end: 12 passes of `kubectl disagg rollout step` (13 commits through git, --gitops)\n" in out
    assert ("  stops: now: wave 1's pause (promote); after pass 6: wave 2's analysis (ttft); "
            "after pass 6: wave 2's 15m soak\n") in out

    code, out, _ = run(capsys, "-f", str(tmp_path), "-o", "json", options=options)
    (fleet,) = json.loads(out)["fleets"]
    assert [s["situation"] for s in fleet["slices"]] == ["done", "held", "held", "held"]
    assert fleet["slices"][1]["replicas"] == {"prefill": 2, "decode": 1} and fleet["slices"][1]["revision"] == old.revision
    assert (fleet["passes"], fleet["commits"], fleet["phase"]) == (12, 13, "AtGate")

    code, out, _ = run(capsys, "-f", str(tmp_path), "-o", "chart", options=options)
    assert code == 0 and out.count("prefill: old ░ new █") == 3  # one chart per wave
    assert "\nwave 1, slice 0: the steps of the slice\nprefill: old" in out
    assert "\nwave 3, slices 2-3: the steps of each slice\nprefill: old" in out


def test_issue39_gitops_plan_reads_the_state_file_and_equals_the_cluster_plan(tmp_path, capsys):
    """`rollout plan --gitops -f DIR`: the position and each slice's replicas from the state
    file, one computation with the cluster's plan (rollout/plan.py's fleet_plan)."""
    from kubectl_disagg.gitops.state import state_document
    from kubectl_disagg.inputs.tree import Reading
    from kubectl_disagg.manifests.writer import to_yaml
    from kubectl_disagg.gitops.store import live_from_state
    from kubectl_disagg.rollout.plan import fleet_plan, live_from_snapshot
    from tests.support.gitops import mid_rollout
    from tests.support.waves import T0

    argo, ds, state = mid_rollout(slices=3)
    (tmp_path / "ds.yaml").write_text(to_yaml(ds.source.data))
    (tmp_path / Reading().state_name).write_text(to_yaml(state_document(state)))
    from_state = fleet_plan(ds, state.position, live_from_state(ds, state), T0)
    from_cluster = fleet_plan(ds, None, live_from_snapshot(ds, argo.snapshot(ds)), T0)
    assert (from_state.slices, from_state.passes) == (from_cluster.slices, from_cluster.passes)
    code, out, err = run(capsys, "--gitops", "-f", str(tmp_path))
    assert (code, err) == (0, "")
    assert out.startswith(f"disaggregatedset/{ds.name}: rollout to revision {ds.revision[:8]}")
    assert f"  to the end: {from_state.passes} passes of `kubectl disagg rollout step`" in out
    code, _, err = run(capsys, "--gitops", "-f", str(tmp_path), "--from", "1,1")
    assert code == 2 and "--gitops" in err


def test_issue48_gitops_plan_loads_its_inputs_once(tmp_path, capsys, monkeypatch):
    """Issue 48: `rollout plan --gitops` loaded the directory twice (its sets, then again with
    their states), against design §1.1; git's store loads it once, states included."""
    from kubectl_disagg.gitops.state import state_document
    from kubectl_disagg.inputs import directory
    from kubectl_disagg.inputs.tree import Reading
    from kubectl_disagg.manifests.writer import to_yaml
    from tests.support.gitops import mid_rollout

    argo, ds, state = mid_rollout(slices=3)
    (tmp_path / "ds.yaml").write_text(to_yaml(ds.source.data))
    (tmp_path / Reading().state_name).write_text(to_yaml(state_document(state)))
    loads, load = [], directory.load
    monkeypatch.setattr(directory, "load", lambda *args, **kwargs: loads.append(kwargs) or load(*args, **kwargs))
    code, out, err = run(capsys, "--gitops", "-f", str(tmp_path))
    assert (code, err) == (0, "") and out.startswith(f"disaggregatedset/{ds.name}: rollout to revision")
    assert len(loads) == 1 and loads[0]["states"] is not None


def test_wide_is_the_table_with_what_each_step_changes(capsys):
    """Issue 47: `-o wide` was refused (exit 2); as kubectl's, it is the table with more columns."""
    code, out, err = run(capsys, "--from", "2,2", "--to", "3,2", "-o", "wide")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[2].split()[-1] == "CHANGE" and lines[3].split()[-1] == "-"
    assert lines[4].endswith("role-0 new +1, role-1 new +1")
    table = run(capsys, "--from", "2,2", "--to", "3,2")[1].splitlines()
    assert len(table) == len(lines) and all(wide.startswith(line.rstrip()) for line, wide in zip(table, lines))
