"""Fleet-sized text (issue 39) on the real kube-apiserver with the LWS status simulator: a
12-slice set rolled through a canary, 25 % and 100 % (`maxSlicesInFlight: 3`) by
`rollout step --until-complete`, promoted at each gate, as a person would run it."""

from __future__ import annotations

from kubectl_disagg.exits import StepExit
from tests.support.progressive import deployed_then_changed, until_held_or_complete
from tests.support.stepping import cli

SPEC = {"waves": [{"slices": 1, "pause": {}}, {"slices": "25%", "pause": {}}, {"slices": "100%"}],
        "maxSlicesInFlight": 3}


def test_a_whole_12_slice_rollout_prints_at_most_150_lines(stepper, tmp_path, lws_simulator):
    # Issue 39: the same rollout printed 1,218 lines, each pass repeating every held slice.
    old, new = deployed_then_changed(stepper, tmp_path, SPEC, slices=12)
    printed, runs = 0, []
    for _ in range(4):
        run = until_held_or_complete(stepper, new, lws_simulator)
        runs.append(run)
        printed += len(run.out.splitlines()) + len(run.err.splitlines())
        if run.code != StepExit.HELD:
            break
        code, out, err = cli(stepper, "rollout", "promote", "-f", str(new))
        assert code == StepExit.OK, err
        printed += len(out.splitlines()) + len(err.splitlines())
    assert runs[-1].code == StepExit.OK, runs[-1].err
    assert [run.code for run in runs] == [StepExit.HELD, StepExit.HELD, StepExit.OK]
    assert printed <= 150, "\n".join(run.out + run.err for run in runs)
    assert "slices 1-2: held, wave 2 not started" not in runs[0].out  # held slices are not listed pass by pass
    assert "llm: wave 1 of 3 (slice 0), 1 of 12 slices done; at the gate: a pause after wave 1" in runs[0].err
