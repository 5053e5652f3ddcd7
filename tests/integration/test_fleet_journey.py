"""Issue 39's scenario end to end: a 12-slice set, a canary gated on analysis (the real
Prometheus), a 25 % wave with a pause and 100 % (`maxSlicesInFlight: 3`); a bad canary aborted,
then a good rollout to the end, in the terminal and through git, read as a person would."""

from __future__ import annotations

import json
import re

import yaml

from kubectl_disagg.core.api import naming
from kubectl_disagg.exits import StepExit
from tests.support.git_repo import deploy
from tests.support.progressive import ROLES, git_rounds, paced, revisions, rollout_state, until_held_or_complete
from tests.support.prometheus import TTFT_QUERY, serve_for
from tests.support.stepping import cli, model

SLICES = 12


def spec(address: str) -> dict:
    return {"waves": [{"slices": 1, "analysis": ["ttft"]}, {"slices": "25%", "pause": {}}, {"slices": "100%"}],
            "maxSlicesInFlight": 3, "onFailure": "abort",
            "analysis": {"prometheus": {"address": address}, "checks": [
                {"name": "ttft", "role": "prefill", "query": TTFT_QUERY, "successCondition": "< 0.5",
                 "interval": "1s", "count": 2}]}}


def lines(*texts: str) -> int:
    return sum(len(text.splitlines()) for text in texts)


def live_replicas(stepper, slice_index: int) -> dict[str, dict[str, int]]:
    """revision → role → replicas of one slice's live LWS."""
    found: dict[str, dict[str, int]] = {}
    for lws in stepper.live.lws():
        labels = lws["metadata"]["labels"]
        if int(labels[naming.SLICE_LABEL]) == slice_index:
            found.setdefault(labels[naming.REVISION_LABEL], {})[labels[naming.ROLE_LABEL]] = lws["spec"]["replicas"]
    return found


def test_in_the_terminal_a_bad_canary_aborts_then_a_good_rollout_ends(stepper, tmp_path, lws_simulator, exporter,
                                                                        prometheus):
    old = paced(tmp_path, stepper.namespace, "img:1", spec(prometheus.address), slices=SLICES)
    stepper.drive(old)
    stable = model(old).revision

    bad = paced(tmp_path, stepper.namespace, "img:2", spec(prometheus.address), slices=SLICES)
    serve_for(exporter, prometheus, 2.0, namespace=stepper.namespace, set_="llm", revision=model(bad).revision)
    aborted = until_held_or_complete(stepper, bad, lws_simulator)
    assert aborted.code == StepExit.HELD, aborted.err
    assert revisions(stepper) == {s: {stable} for s in range(SLICES)}  # only the canary moved, and came back
    # An abort reads as one: the slice goes back, and the progress line says why.
    back = aborted.out[aborted.out.index("slice 0: rollback to revision"):]
    assert f"slice 0: rollback to revision {stable} complete" in back and "rollout to revision" not in back
    assert (f"llm: rollback of slice 0 to {stable} — aborted: analysis failed after wave 1: ttft: "
            "1 of 1 measurements failed (failureLimit 0): 2.425 is not < 0.5") in aborted.err
    assert "the rollout was aborted" in aborted.err and lines(aborted.out, aborted.err) <= 40
    # ... and so do the RolloutState and its Events.
    assert "the rollout was aborted (analysis failed after wave 1" in rollout_state(stepper)["rollout"]["message"]
    events = json.loads(stepper.control_plane.kubectl("get", "events.events.k8s.io", "-n", stepper.namespace,
                                                      "-o", "json").stdout)["items"]
    (abort,) = [e["note"] for e in events if e["reason"] == "RolloutAborted"]
    assert abort.startswith(f"Rollout aborted at wave 1 of 3: rollback of slice 0 to {stable} — aborted: analysis "
                            "failed after wave 1: ttft"), abort

    good = paced(tmp_path, stepper.namespace, "img:3", spec(prometheus.address), slices=SLICES)
    target = model(good).revision
    serve_for(exporter, prometheus, 0.1, namespace=stepper.namespace, set_="llm", revision=target)
    printed, codes = 0, []
    for _ in range(4):
        run = until_held_or_complete(stepper, good, lws_simulator)
        codes.append(run.code)
        printed += lines(run.out, run.err)
        if run.code != StepExit.HELD:
            break
        # At the pause after wave 2: the plan shows the held slices as the live objects run them.
        code, out, err = cli(stepper, "rollout", "plan", "-f", str(good))
        assert code == 0, err
        for s in range(3, SLICES):
            assert live_replicas(stepper, s) == {stable: {"prefill": 1, "decode": 1}}
        assert f"slices 3-11: held at {stable} (prefill 1, decode 1), wave 3" in out
        assert "now: wave 2 of 3 is done and waits at its gate (pause)" in out
        # rollout status -w ends where the step is held, with its code, and says what passes it
        code, out, err = cli(stepper, "rollout", "status", "-f", str(good), "-w", "--timeout", "60s")
        assert code == StepExit.HELD and "rollout promote" in err, (code, err)
        code, out, err = cli(stepper, "rollout", "status", "-f", str(good), "-o", "json")
        (status,) = json.loads(out)["items"] if "items" in json.loads(out) else [json.loads(out)]
        rollout = status["status"]["rollout"] if "rollout" in status.get("status", {}) else status["rollout"]
        assert rollout["wave"]["index"] == 1 and rollout["gate"]["kind"] == "pause" and rollout["held"]
        assert rollout["fleet"] == {"slices": SLICES, "done": 3, "inFlight": 0, "held": 9}
        assert rollout["lastAnalysis"]["phase"] == "passed" and rollout["lastAnalysis"]["checks"][0]["values"]
        code, out, err = cli(stepper, "rollout", "promote", "-f", str(good))
        assert code == StepExit.OK, err
        printed += lines(out, err)
    assert codes == [StepExit.HELD, StepExit.OK]  # the analysis passed by itself; the pause needed a promote
    assert revisions(stepper) == {s: {target} for s in range(SLICES)}
    assert printed <= 150


# --- through git --------------------------------------------------------------------------------


STEP = re.compile(r"^llm: (?P<what>rollout to \w+|rollback of [^,]+ to \w+|rollback to \w+), step (?P<n>\d+)")


def numbered(titles: list[str]) -> list[tuple[str, int]]:
    """(what the commit rolls, its number) of each step commit's title."""
    found = [STEP.match(title) for title in titles]
    assert all(found), [t for t, m in zip(titles, found) if not m]
    return [(m["what"], int(m["n"])) for m in found if m]


def assert_counted(titles: list[str]) -> None:
    """Each rollout's (and rollback's) commits count 1, 2, 3 ... over the whole of it: never
    back, never twice."""
    seen: dict[str, list[int]] = {}
    for what, n in numbered(titles):
        seen.setdefault(what, []).append(n)
    for what, numbers in seen.items():
        assert numbers == list(range(1, len(numbers) + 1)), (what, numbers)


def test_through_git_a_bad_canary_aborts_then_a_good_rollout_ends(repo, tmp_path, exporter, prometheus):
    deploy(repo, ROLES, slices=SLICES)
    stable = model(repo.set_file).revision
    policy = {"apiVersion": "kubectl-disagg.x-k8s.io/v1alpha1", "kind": "RolloutPolicy",
              "metadata": {"name": "llm", "namespace": repo.namespace},
              "spec": {"targetRef": {"name": "llm"}, **spec(prometheus.address)}}
    (repo.root / "policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    pr = tmp_path / "pr.md"

    repo.change_set("a bad image", ROLES, slices=SLICES, image="img:2")
    serve_for(exporter, prometheus, 2.0, namespace=repo.namespace, set_="llm", revision=model(repo.set_file).revision)
    held, texts = git_rounds(repo, pr, {StepExit.HELD})
    titles = [text.splitlines()[0] for text in texts]
    # with one replica per role: 3 commits forward (the canary), 4 back (the last removes the bad revision)
    assert len(titles) <= 7, titles
    assert_counted(titles)
    back = [t for t in titles if t.startswith(f"llm: rollback of slice 0 to {stable}")]
    assert back and all("— aborted: analysis failed after wave 1: ttft" in t for t in back), "\n".join(titles)
    assert all("**Rollback.** The rollout to" in text for text in texts[-len(back):])  # the bodies say so too
    repo.sync()
    assert {s: set(g) for s, g in repo.live.groups().items()} == {s: {stable} for s in range(SLICES)}

    repo.change_set("a good image", ROLES, slices=SLICES, image="img:3")
    target = model(repo.set_file).revision
    serve_for(exporter, prometheus, 0.1, namespace=repo.namespace, set_="llm", revision=target)
    titles, people = [], 0
    for _ in range(4):
        run, texts = git_rounds(repo, pr, {StepExit.HELD, StepExit.COMPLETE}, limit=60)
        titles += [text.splitlines()[0] for text in texts]
        if run.code == StepExit.COMPLETE:
            break
        # status --gitops -w ends where the step is held, with its code; -o json has the rollout's fields
        watched = repo.status("-w", "--timeout", "60s")
        assert watched.code == StepExit.HELD and "rollout promote --gitops" in watched.out, watched
        assert "disaggregatedset/llm in " in watched.err and " is held: wave 2 is paused" in watched.err
        rollout = json.loads(repo.status("-o", "json").out)["rollout"]
        assert rollout["wave"]["index"] == 1 and rollout["gate"] == {"kind": "pause", "wave": 1, "reached": True}
        assert rollout["held"] and rollout["fleet"] == {"slices": SLICES, "done": 3, "inFlight": 0, "held": 9}
        assert rollout["lastAnalysis"]["phase"] == "passed" and rollout["lastAnalysis"]["checks"][0]["values"]
        promoted = repo.cli("rollout", "promote", "--gitops", "-f", str(repo.root), "--commit")
        assert promoted.code == 0, promoted
        people += 1
    assert run.code == StepExit.COMPLETE and people == 1  # the analysis passed by itself; the pause needed one
    assert_counted(titles)
    assert len(titles) <= 17, titles  # measured at one replica per role; docs/gitops.md has the larger fleet
    assert any("analysis after wave 1 passed" in t for t in titles) and any("wave 2 is paused" in t for t in titles)
    repo.sync()
    assert {s: set(g) for s, g in repo.live.groups().items()} == {s: {target} for s in range(SLICES)}
    # the history, from git: three revisions, the bad one aborted by its analysis
    history = json.loads(repo.cli("rollout", "history", "--gitops", "-f", str(repo.root), "-o", "json").out)
    outcomes = [(r["revision"], r["outcome"]) for r in history["revisions"]]
    assert outcomes[0] == (target, "complete") and outcomes[1][1] == "aborted" and outcomes[2] == (stable, "complete")
    assert "analysis failed after wave 1" in history["revisions"][1]["why"]
    assert history["revisions"][0]["previousRevision"] == outcomes[1][0]
    # undo: one reviewed commit back to the revision before last that was not aborted (the stable
    # one); its rollout is paced by the policy like any other, and the history says it goes back
    undone = repo.cli("rollout", "undo", "--gitops", "-f", str(repo.root), "--commit")
    assert undone.code == 0 and undone.out == f"disaggregatedset/llm rolled back to revision {stable}\n", undone
    assert repo.git("log", "-1", "--format=%s").strip() == f"Roll back llm to revision {stable}"
    assert model(repo.set_file).revision == stable and repo.clean()
    serve_for(exporter, prometheus, 0.1, namespace=repo.namespace, set_="llm", revision=stable)
    run, texts = git_rounds(repo, pr, {StepExit.HELD, StepExit.COMPLETE}, limit=60)
    assert run.code == StepExit.HELD, run  # at wave 2's pause: the canary and wave 2 went first
    titles = [text.splitlines()[0] for text in texts]
    assert titles and all(t.startswith(f"llm: rollback to {stable}, step ") for t in titles), titles
    assert_counted(titles)
    assert "`kubectl disagg rollout undo` wrote the templates of revision" in texts[0]
    repo.sync()
    groups = {s: set(g) for s, g in repo.live.groups().items()}
    assert groups[0] == {stable} and groups[SLICES - 1] == {target}, groups
    newest = json.loads(repo.cli("rollout", "history", "--gitops", "-f", str(repo.root), "-o", "json").out)
    assert (newest["revisions"][0]["revision"], newest["revisions"][0].get("rollback")) == (stable, True)
