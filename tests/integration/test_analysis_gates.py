"""Analysis gates end to end (design §9.4): `rollout step --until-complete` on the real API server,
the canary's latencies served by the test's exporter and measured by a real Prometheus."""

from __future__ import annotations

import re
import time

import pytest
import yaml

from kubectl_disagg.exits import StepExit, VerbExit
from kubectl_disagg.views.analysis_progress import AnalysisProgress
from tests.oracles.argocd_harness import resource_health
from tests.support.git_repo import deploy
from tests.support.progressive import (
    ROLES,
    git_rounds,
    deployed_then_changed,
    revisions,
    rollout_state,
    until_held_or_complete,
    versions_of,
    versions_of_git,
)
from tests.support.prometheus import TTFT_QUERY, expose, serve_for
from tests.support.stepping import assert_matches_render, cli, model


def gated(address: str | dict, on_failure: str = "abort") -> dict:
    """A canary wave gated on ttft; `address` a URL, or the Prometheus mapping itself."""
    endpoint = address if isinstance(address, dict) else {"address": address}
    return {"waves": [{"slices": 1, "analysis": ["ttft"]}, {"slices": "100%"}], "onFailure": on_failure,
            "analysis": {"prometheus": endpoint, "checks": [
                {"name": "ttft", "role": "prefill", "query": TTFT_QUERY, "successCondition": "< 0.5",
                 "interval": "1s", "count": 3}]}}


def start(stepper, tmp_path, spec):
    old, new = deployed_then_changed(stepper, tmp_path, spec)
    return new, model(old).revision, model(new).revision


def test_a_good_canary_completes_through_its_gate_with_the_values(stepper, tmp_path, lws_simulator, exporter,
                                                                  prometheus, monkeypatch):
    new, stable, target = start(stepper, tmp_path, gated(prometheus.address))
    serve_for(exporter, prometheus, 0.1, namespace=stepper.namespace, set_="llm", revision=target)
    seen = []  # the live RolloutState's health as Argo CD gives it, at each measurement
    shown = AnalysisProgress.__call__
    monkeypatch.setattr(AnalysisProgress, "__call__", lambda self, run: (
        seen.append(resource_health(rollout_state(stepper))), shown(self, run)))
    run = until_held_or_complete(stepper, new, lws_simulator)
    assert run.code == StepExit.OK, run.err
    assert_matches_render(model(new), stepper.live)
    verdict = rollout_state(stepper)["position"]["verdicts"]["0"]
    assert verdict["phase"] == "passed" and verdict["message"].startswith("ttft: 0.09")
    (check,) = verdict["checks"]
    assert [m["ok"] for m in check["measurements"]] == [True] * 3
    assert all(0.08 < m["values"][0] <= 0.1 and m["time"].endswith("Z") for m in check["measurements"])
    assert "analysis wave 1: ttft [" in run.err  # the progress went to stderr
    assert len(seen) == 3 and all(h["status"] == "Progressing" for h in seen), seen
    assert "wave 1: measuring analysis ttft since" in seen[0]["message"]


@pytest.mark.parametrize("on_failure", ["abort", "pause"])
def test_a_slow_canary_does_on_failure_and_leaves_every_other_slice_untouched(stepper, tmp_path, lws_simulator,
                                                                              exporter, prometheus, on_failure):
    new, stable, target = start(stepper, tmp_path, gated(prometheus.address, on_failure))
    serve_for(exporter, prometheus, 2.0, namespace=stepper.namespace, set_="llm", revision=target)
    untouched = versions_of(stepper, {1, 2, 3})
    run = until_held_or_complete(stepper, new, lws_simulator)
    assert run.code == StepExit.HELD, run.err
    state = rollout_state(stepper)
    verdict = state["position"]["verdicts"]["0"]
    assert verdict["phase"] == "failed"
    assert verdict["message"].startswith("ttft: 1 of 1 measurements failed (failureLimit 0): 2.4")
    assert versions_of(stepper, {1, 2, 3}) == untouched  # never written
    if on_failure == "abort":
        assert revisions(stepper) == {s: {stable} for s in range(4)}  # the canary rolled back
        assert state["rollout"]["phase"] == "Aborted"
    else:
        assert revisions(stepper)[0] == {target}  # paused where it stands
        assert state["rollout"]["phase"] == "Paused"
    assert "2.4" in state["rollout"]["message"]


def test_through_the_service_proxy_a_slow_canary_aborts(stepper, tmp_path, lws_simulator,
                                                        prometheus_in_a_namespace):
    server, inner, netns = prometheus_in_a_namespace
    expose(stepper.control_plane, stepper.namespace, "prometheus", netns.inside)
    service = {"service": {"namespace": stepper.namespace, "name": "prometheus", "port": "web"}}
    new, stable, target = start(stepper, tmp_path, gated(service))
    serve_for(inner, server, 2.0, namespace=stepper.namespace, set_="llm", revision=target)
    untouched = versions_of(stepper, {1, 2, 3})
    run = until_held_or_complete(stepper, new, lws_simulator)
    assert run.code == StepExit.HELD, run.err
    verdict = rollout_state(stepper)["position"]["verdicts"]["0"]
    assert verdict["phase"] == "failed" and "2.425 is not < 0.5" in verdict["message"]
    assert revisions(stepper) == {s: {stable} for s in range(4)} and versions_of(stepper, {1, 2, 3}) == untouched


def test_an_unreachable_prometheus_is_a_failed_measurement(stepper, tmp_path, lws_simulator):
    new, stable, target = start(stepper, tmp_path, gated("http://127.0.0.1:1"))
    run = until_held_or_complete(stepper, new, lws_simulator)
    assert run.code == StepExit.HELD, run.err
    verdict = rollout_state(stepper)["position"]["verdicts"]["0"]
    assert verdict["phase"] == "failed"
    assert "error: Prometheus at http://127.0.0.1:1: no answer: connection refused" in verdict["message"]
    assert revisions(stepper) == {s: {stable} for s in range(4)}


def test_promote_full_skips_a_failed_analysis_only_with_skip_analysis_and_says_so(stepper, tmp_path, lws_simulator):
    """A canary whose analysis failed (Prometheus unreachable) pauses it; `promote --full` alone is
    refused, naming the analysis; with `--skip-analysis` it names what it passes and the rollout
    completes."""
    new, stable, target = start(stepper, tmp_path, gated("http://127.0.0.1:1", "pause"))
    assert until_held_or_complete(stepper, new, lws_simulator).code == StepExit.HELD
    code, out, err = cli(stepper, "rollout", "promote", "--full", "-f", str(new))
    assert code == VerbExit.REFUSED and out == "", err
    assert "--full would pass the analysis after wave 1 (ttft) without a verdict; add --skip-analysis" in err
    assert rollout_state(stepper)["position"].get("full") is None  # nothing written
    code, out, err = cli(stepper, "rollout", "promote", "--full", "--skip-analysis", "--reason", "metrics down",
                         "-f", str(new))
    assert code == VerbExit.OK, err
    assert "promoted --full: the analysis after wave 1 (ttft), without its verdict, passes as its wave completes" in out
    assert rollout_state(stepper)["position"]["full"]["reason"] == "metrics down"
    assert until_held_or_complete(stepper, new, lws_simulator).code == StepExit.OK
    assert revisions(stepper) == {s: {target} for s in range(4)}


# --- through git and the Argo CD harness -------------------------------------------------------

def paced_through_git(repo, address: str, on_failure: str = "abort") -> tuple[str, str]:
    deploy(repo, ROLES, slices=4)
    stable = model(repo.set_file).revision
    policy = {"apiVersion": "kubectl-disagg.x-k8s.io/v1alpha1", "kind": "RolloutPolicy",
              "metadata": {"name": "llm", "namespace": repo.namespace},
              "spec": {"targetRef": {"name": "llm"}, **gated(address, on_failure)}}
    (repo.root / "policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    repo.change_set("new image, gated on analysis", ROLES, slices=4, image="img:2")
    return stable, model(repo.set_file).revision


def test_through_git_the_pull_request_carries_the_values_and_the_rollout_completes(repo, tmp_path, exporter,
                                                                                   prometheus):
    stable, target = paced_through_git(repo, prometheus.address)
    serve_for(exporter, prometheus, 0.1, namespace=repo.namespace, set_="llm", revision=target)
    done, texts = git_rounds(repo, tmp_path / "pr.md", {StepExit.COMPLETE})
    (opening,) = [text for text in texts if "**Analysis after wave 1: passed.** ttft: 0.09" in text]
    assert opening.splitlines()[0].endswith("; analysis after wave 1 passed; wave 2 starts")
    assert "at 3 measurements" in opening and "| ttft | prefill | `< 0.5` |" in opening
    repo.sync()
    assert {s: set(g) for s, g in repo.live.groups().items()} == {s: {target} for s in range(4)}
    assert repo.state_health()["status"] == "Healthy"


def test_through_git_a_slow_canary_writes_the_abort_and_argo_cd_shows_it_degraded(repo, tmp_path, exporter,
                                                                                 prometheus):
    stable, target = paced_through_git(repo, prometheus.address)
    serve_for(exporter, prometheus, 2.0, namespace=repo.namespace, set_="llm", revision=target)
    untouched = versions_of_git(repo, {1, 2, 3})
    held, texts = git_rounds(repo, tmp_path / "pr.md", {StepExit.HELD})
    (failing,) = [text for text in texts if "**Analysis after wave 1: failed.**" in text]
    assert "2.425 is not < 0.5" in failing and "2.425 (missed)" in failing and "`onFailure: abort` follows" in failing
    assert failing.splitlines()[0].startswith(f"llm: rollback of slice 0 to {stable}, step 1 — aborted: analysis failed "
                                              "after wave 1: ttft: 1 of 1 measurements failed")
    repo.sync()
    health = repo.state_health()
    assert health["status"] == "Degraded" and "ttft" in health["message"] and "2.425" in health["message"], health
    assert {s: set(g) for s, g in repo.live.groups().items()} == {s: {stable} for s in range(4)}
    assert versions_of_git(repo, {1, 2, 3}) == untouched


def to_the_gate_through_git(repo):
    """The canary stepped through git to its analysis gate, whose check takes at least 2m (count
    3 at 1m intervals): the run of the step that reached it with --timeout 5s, refusing to start
    measuring."""
    paced_through_git(repo, "http://127.0.0.1:1")
    policy = yaml.safe_load((repo.root / "policy.yaml").read_text())
    policy["spec"]["analysis"]["checks"][0]["interval"] = "1m"
    (repo.root / "policy.yaml").write_text(yaml.safe_dump(policy, sort_keys=False))
    repo.commit("the gate measures every minute")
    for index in range(40):
        repo.sync()
        repo.simulator.sync(repo.namespace)
        run = repo.step("--timeout", "5s")
        if run.code != StepExit.OK:
            return run
        repo.commit(f"rollout step {index}")
    raise AssertionError("never reached the gate")


def test_through_git_an_analysis_longer_than_the_timeout_exits_4_and_writes_nothing(repo):
    # With --timeout 5s the step that reaches the gate refuses to start measuring, says so in the
    # words a person would use, and writes nothing.
    run = to_the_gate_through_git(repo)
    assert run.code == StepExit.TIMEOUT, (run.code, run.err)
    assert re.search(r"the analysis takes at least 2m \(count × interval of ttft\), more than the [0-9.]+s left of "
                     r"--timeout 5s; nothing written", run.err), run.err
    assert repo.git("status", "--porcelain") == ""  # the state file is as committed


def test_a_prometheus_that_never_answers_ends_the_step_within_its_timeout(stepper, tmp_path, lws_simulator):
    # It accepts the connection and never answers: the step used to resend each query for
    # minutes past --timeout. Bounded now: exit 4 by the deadline, nothing recorded.
    import time

    from tests.fakes.servers import Silent

    server = Silent()
    try:
        spec = gated(server.address)
        spec["analysis"]["checks"][0]["count"] = 1
        new, stable, target = start(stepper, tmp_path, spec)
        started = time.monotonic()
        with lws_simulator.running(stepper.namespace, delay=0.05, interval=0.05):
            run = stepper(new, "--until-complete", "--timeout", "15s")
        took = time.monotonic() - started
    finally:
        server.close()
    assert run.code == StepExit.TIMEOUT, run.err
    assert "the analysis did not end within --timeout 15s: ttft had no answer in time" in run.err, run.err
    assert took <= 15 + 3, took
    assert "verdicts" not in rollout_state(stepper)["position"]
    assert revisions(stepper)[1] == {stable}  # the next wave never opened


@pytest.mark.parametrize("brake, done", [("pause", "paused"), ("abort", "aborted")])
def test_a_brake_from_another_process_ends_a_running_analysis_without_a_verdict(stepper, tmp_path, lws_simulator,
                                                                                exporter, prometheus, brake, done):
    # Issue 37 item 15: during an analysis, `rollout pause|abort` exited 3 (the Lease is held)
    # and the stepper went on to its verdict. Now the analysis ends before its next measurement.
    import time

    from kubernetes.client.exceptions import ApiException

    from tests.support.progressive import CONSOLE_SCRIPT, process

    assert CONSOLE_SCRIPT.exists(), f"{CONSOLE_SCRIPT} not installed"
    spec = gated(prometheus.address)
    spec["analysis"]["checks"][0]["count"] = 30  # 29 s of measurements, a second apart
    new, stable, target = start(stepper, tmp_path, spec)
    serve_for(exporter, prometheus, 0.1, namespace=stepper.namespace, set_="llm", revision=target)
    untouched = versions_of(stepper, {1, 2, 3})

    def measuring() -> bool:
        try:
            return "measuring analysis" in rollout_state(stepper)["rollout"]["message"]
        except ApiException:
            return False  # not written yet

    with lws_simulator.running(stepper.namespace, delay=0.05, interval=0.05):
        running = process(stepper, "rollout", "step", "-f", str(new), "--until-complete", "--timeout", "3m")
        until = time.monotonic() + 90
        while not measuring():
            assert running.poll() is None and time.monotonic() < until, running.communicate()
            time.sleep(0.05)
        time.sleep(2)  # a few measurements in
        braked = process(stepper, "rollout", brake, "-f", str(new))
        out, err = braked.communicate(timeout=60)
        landed = time.monotonic()
        stepped, stepper_err = running.communicate(timeout=120)
        took = time.monotonic() - landed
    assert braked.returncode == 0, err
    assert f"/{running.pid}/" in out  # the verb names the running stepper
    assert running.returncode == StepExit.HELD, stepper_err
    assert "the analysis of wave 1 stopped without a verdict: the rollout was " in stepper_err, stepper_err
    assert took < 7, took  # within one measurement interval (1 s) and one wait stretch (5 s)
    state = rollout_state(stepper)
    assert "verdicts" not in state["position"]  # nothing recorded: resume measures again
    assert versions_of(stepper, {1, 2, 3}) == untouched
    assert revisions(stepper)[0] == ({target} if brake == "pause" else {stable})
    print(f"{brake} during an analysis: the stepper exited {took:.2f}s after the verb returned")


# --- retry after an analysis abort (issue 40) ---------------------------------------------------


def fixed(exporter, prometheus, namespace: str, revision: str) -> None:
    """The canary's latency fixed outside the set (its backend): good values only, once the
    query's 5 s rate window holds none of the slow ones."""
    serve_for(exporter, prometheus, 0.1, namespace=namespace, set_="llm", revision=revision)
    time.sleep(7)


def test_retry_after_an_analysis_abort_starts_the_canary_again_and_completes(stepper, tmp_path, lws_simulator,
                                                                             exporter, prometheus):
    new, stable, target = start(stepper, tmp_path, gated(prometheus.address))
    serve_for(exporter, prometheus, 2.0, namespace=stepper.namespace, set_="llm", revision=target)
    aborted = until_held_or_complete(stepper, new, lws_simulator)
    assert aborted.code == StepExit.HELD and rollout_state(stepper)["rollout"]["phase"] == "Aborted"
    assert revisions(stepper) == {s: {stable} for s in range(4)}
    assert "`kubectl disagg rollout retry` starts it again from wave 1" in aborted.err  # the way on
    fixed(exporter, prometheus, stepper.namespace, target)
    code, out, err = cli(stepper, "rollout", "retry", "-f", str(new), "--reason", "the backend is fixed")
    assert code == 0, err
    position = rollout_state(stepper)["position"]
    assert position["retried"]["by"] == "admin" and position["retried"]["reason"] == "the backend is fixed"
    assert not position.get("verdicts") and not position.get("aborted")  # a fresh position
    done = until_held_or_complete(stepper, new, lws_simulator)
    assert done.code == StepExit.OK, done.err
    assert rollout_state(stepper)["position"]["verdicts"]["0"]["phase"] == "passed"
    assert revisions(stepper) == {s: {target} for s in range(4)}


def test_through_git_retry_after_an_analysis_abort_is_one_commit_and_the_rollout_completes(repo, tmp_path,
                                                                                          exporter, prometheus):
    stable, target = paced_through_git(repo, prometheus.address)
    serve_for(exporter, prometheus, 2.0, namespace=repo.namespace, set_="llm", revision=target)
    git_rounds(repo, tmp_path / "pr.md", {StepExit.HELD})
    fixed(exporter, prometheus, repo.namespace, target)
    retried = repo.cli("rollout", "retry", "--gitops", "-f", str(repo.root), "--commit", "--reason", "fixed")
    assert retried.code == 0 and repo.clean(), retried
    assert "retry" in repo.git("log", "-1", "--format=%s")
    assert yaml.safe_load(repo.state_file.read_text())["position"]["retried"]["reason"] == "fixed"
    git_rounds(repo, tmp_path / "pr.md", {StepExit.COMPLETE})
    repo.sync()
    assert {s: set(g) for s, g in repo.live.groups().items()} == {s: {target} for s in range(4)}


# --- rollout status -w at an analysis gate (issue 47 item 14) -----------------------------------


def test_issue47_item14_status_watch_at_an_analysis_gate_ends_at_once_unless_a_stepper_measures_it(
        stepper, tmp_path, lws_simulator, exporter, prometheus):
    """With no stepper, `rollout status -w` at an analysis gate without a verdict used to wait out
    --timeout (exit 4): only `rollout step` measures it. It ends at once, held (7), naming the
    step; while a `rollout step --until-complete` holds the Lease measuring it, it follows on
    to the verdict and the rollout beyond it."""
    from kubectl_disagg.exits import StatusExit
    from tests.support.progressive import process

    spec = gated(prometheus.address)
    spec["analysis"]["checks"][0]["count"] = 12  # at least 11 s: more than a 10 s --timeout leaves
    new, stable, target = start(stepper, tmp_path, spec)
    for _ in range(10):  # to the gate: the step that reaches it will not start a measurement it cannot end
        with lws_simulator.running(stepper.namespace, delay=0.05, interval=0.05):
            reached = stepper(new, "--until-complete", "--timeout", "10s")
        if "the analysis takes at least 11s" in reached.err:
            break
    assert reached.code == StepExit.TIMEOUT, reached.err
    state = rollout_state(stepper)
    assert "verdicts" not in state["position"]
    assert state["rollout"]["phase"] == "AtGate", state["rollout"]  # not left Rolling, "measuring analysis"

    started = time.monotonic()
    code, out, err = cli(stepper, "rollout", "status", "-f", str(new), "-w", "--timeout", "60s")
    alone = time.monotonic() - started
    assert code == StatusExit.HELD, (code, err)
    assert alone < 10, alone
    assert ("wave 1 waits for analysis (ttft), which no `rollout step` is measuring: "
            f"`kubectl disagg rollout step -f {new}` measures it") in err, err

    serve_for(exporter, prometheus, 0.1, namespace=stepper.namespace, set_="llm", revision=target)
    with lws_simulator.running(stepper.namespace, delay=0.05, interval=0.05):
        running = process(stepper, "rollout", "step", "-f", str(new), "--until-complete", "--timeout", "3m")
        until = time.monotonic() + 90
        while not holds_the_lease(stepper, running.pid):  # the stepper that reaches the gate measures it
            assert running.poll() is None and time.monotonic() < until, running.communicate()
            time.sleep(0.05)
        started = time.monotonic()
        code, out, err = cli(stepper, "rollout", "status", "-f", str(new), "-w", "--timeout", "90s")
        followed = time.monotonic() - started
        stepped, stepper_err = running.communicate(timeout=120)
    assert running.returncode == StepExit.OK, stepper_err
    assert code == StatusExit.AVAILABLE, (code, err)
    assert "which no `rollout step` is measuring" not in err
    assert rollout_state(stepper)["position"]["verdicts"]["0"]["phase"] == "passed"
    assert followed > 5, followed  # it waited through the measurements, at least 11 s from the first
    assert revisions(stepper) == {s: {target} for s in range(4)}
    print(f"status -w at an analysis gate: alone it ended held in {alone:.2f}s; "
          f"with a stepper measuring it followed {followed:.2f}s to Available")


def test_issue47_item14_through_git_status_at_an_analysis_gate_names_the_step_and_watch_ends_held(repo):
    """Through git, at an analysis gate without a verdict, `rollout status --gitops` read "held by
    the RolloutPolicy: a --gitops verb's commit passes it" (exit 7) where `rollout step --gitops`
    measures it and writes the verdict: the step is the next action (exit 0). Nothing else
    measures it, so -w ends there at once, held (7), naming the step, as in the cluster."""
    assert to_the_gate_through_git(repo).code == StepExit.TIMEOUT
    run = repo.status()
    assert run.code == StepExit.OK, (run.code, run.out, run.err)
    assert "next: run rollout step --gitops" in run.out
    assert f"wave 1 waits for analysis (ttft): `kubectl disagg rollout step --gitops -f {repo.root}` measures it" in run.out
    started = time.monotonic()
    run = repo.status("-w", "--timeout", "60s")
    took = time.monotonic() - started
    assert run.code == StepExit.HELD, (run.code, run.err)
    assert took < 10, took
    assert (f"disaggregatedset/llm in {repo.namespace} is held: wave 1 waits for analysis (ttft): "
            f"`kubectl disagg rollout step --gitops -f {repo.root}` measures it") in run.err, run.err
    assert repo.git("status", "--porcelain") == ""  # status writes nothing
    print(f"status --gitops -w at an analysis gate ended held in {took:.2f}s")


def holds_the_lease(stepper, pid: int) -> bool:
    """Whether process `pid` holds the set's Lease (its holder identity is user@host/pid/nonce)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    try:
        lease = client.CoordinationV1Api(stepper.live.api).read_namespaced_lease("kubectl-disagg-llm",
                                                                                  stepper.namespace)
    except ApiException:
        return False
    return f"/{pid}/" in (lease.spec.holder_identity or "")
