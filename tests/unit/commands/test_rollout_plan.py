"""`kubectl disagg rollout plan` from flags and files: output formats and input errors, through main()."""

from __future__ import annotations

import json

import pytest
import yaml

from kubectl_disagg.cli import main
from tests.support.paths import EXAMPLES

WORKED_CHECK = ["--from", "5,2", "--to", "5,2", "--max-surge", "2", "--max-unavailable", "1"]


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(["rollout", "plan", *args])
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
        "Roles prefill,decode from 5,2 to 5,2 (max surge 2,2; max unavailable 1,1): 6 steps\n"
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
    assert lines[0].endswith(": 20 steps")
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
