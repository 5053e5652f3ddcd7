"""`rollout dashboard` end to end (issue 50): the command run as a user runs it, on the local
control plane, its page driven in Debian's Chromium. A 12-slice rollout with a canary judged by a
real Prometheus, a pause gate and an abort is followed live; each action clicked moves the
rollout as the CLI verb would (the same position, recorded with the same who and the reason);
an LWS change reaches the page, pushed (its time is make bench's); a request without the token, from a foreign
Host, without the CSRF token or guarded by a version the page no longer shows changes nothing.
Its screenshots illustrate docs/howto/dashboard.md and the README."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
from urllib.parse import urlsplit

import pytest
import yaml
from kubernetes import client

from kubectl_disagg.core.api import naming
from kubectl_disagg.exits import StepExit, VerbExit
from tests.support.browser import chromium, screenshot
from tests.support.git_repo import deploy
from tests.support.progressive import ROLES, deployed_then_changed, rollout_state
from tests.support.prometheus import TTFT_QUERY, serve_for
from tests.support.stepping import cli, model

SLICES = 12


def policy(address: str) -> dict:
    return {"waves": [{"slices": 1, "analysis": ["ttft"]}, {"slices": 3, "pause": {}}, {"slices": "100%"}],
            "maxSlicesInFlight": 3, "onFailure": "abort",
            "analysis": {"prometheus": {"address": address}, "checks": [
                {"name": "ttft", "role": "prefill", "query": TTFT_QUERY, "successCondition": "< 0.5",
                 "interval": "1s", "count": 3}]}}


def stored(stepper, directory) -> None:
    """The set and its RolloutPolicy stored in the cluster (the dashboard shows stored sets)."""
    api = client.CustomObjectsApi(stepper.live.api)
    for path in sorted(directory.iterdir()):
        document = yaml.safe_load(path.read_text())
        group, version = document["apiVersion"].split("/")
        plural = "rolloutpolicies" if document["kind"] == "RolloutPolicy" else "disaggregatedsets"
        api.create_namespaced_custom_object(group, version, stepper.namespace, plural, document)


class Served:
    """`kubectl-disagg rollout dashboard` in a process of its own, and its URL."""

    def __init__(self, control_plane, namespace: str, *args: str):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kubectl_disagg", "rollout", "dashboard", "-n", namespace, "--port", "0",
             "--kubeconfig", str(control_plane.kubeconfig), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert " at http://127.0.0.1:" in line, line + self.process.stderr.read()
        self.url = line.split(" at ", 1)[1].strip()
        self.host = urlsplit(self.url).netloc
        self.token = urlsplit(self.url).query.removeprefix("token=")

    def request(self, method: str, path: str, body: dict | None = None, headers: dict | None = None,
                host: str | None = None) -> tuple[int, str]:
        address, port = self.host.split(":")
        connection = http.client.HTTPConnection(address, int(port), timeout=10)
        connection.request(method, path, body=json.dumps(body) if body is not None else None,
                           headers={"Host": host or self.host, **(headers or {})})
        response = connection.getresponse()
        return response.status, response.read().decode()

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def wait_for(driver, script: str, seconds: float = 20.0):
    deadline = time.monotonic() + seconds
    while True:
        value = driver.execute_script(script)
        if value or time.monotonic() > deadline:
            assert value, f"never true within {seconds}s: {script}"
            return value
        time.sleep(0.02)


CLASSES = ("return Array.from({length: Number(document.querySelector('table.grid').dataset.slices)}, (_, s) => "
           "Array.from(document.querySelectorAll(`td.cell[data-slice=\"${s}\"]`)).map(c => c.dataset.class).join(','))")


def classes(driver) -> list[str]:
    return driver.execute_script(CLASSES)


def click(driver, verb: str, reason: str) -> str:
    """The action clicked with its reason; the page's notice (what the verb said)."""
    driver.execute_script("document.getElementById('notice').hidden = true")
    box = driver.find_element("css selector", "input[data-reason-for]")
    box.clear()
    box.send_keys(reason)
    driver.find_element("css selector", f"button[data-verb={verb}]").click()
    wait_for(driver, "return !document.getElementById('notice').hidden")
    return driver.execute_script("return document.getElementById('notice').textContent")


def position(stepper) -> dict:
    return rollout_state(stepper)["position"]


def test_a_canary_with_analysis_and_an_abort_followed_live_and_driven_from_the_page(
        stepper, tmp_path, lws_simulator, exporter, prometheus):
    old, new = deployed_then_changed(stepper, tmp_path, policy(prometheus.address), slices=SLICES)
    target = model(new).revision
    stored(stepper, new)
    serve_for(exporter, prometheus, 0.1, namespace=stepper.namespace, set_="llm", revision=target)
    served = Served(stepper.control_plane, stepper.namespace)
    try:
        with chromium(1400, 1300) as driver:
            driver.get(served.url)
            wait_for(driver, "return document.querySelectorAll('section.set td.cell').length === 24")
            assert classes(driver) == ["stable,stable"] * SLICES

            # the canary, judged by Prometheus, then wave 2, up to the pause gate: followed live
            with lws_simulator.running(stepper.namespace, delay=0.05, interval=0.05):
                code, out, err = cli(stepper, "rollout", "step", "llm", "-n", stepper.namespace, "--until-complete",
                                     "--timeout", "2m")
            assert code == StepExit.HELD, err
            wait_for(driver, "return document.querySelector('.gate') && "
                             "document.querySelector('.gate').dataset.waitsFor === 'promote'")
            assert classes(driver) == ["new,new"] * 3 + ["stable,stable"] * 9  # waves: slice 0, slices 1-2
            assert driver.execute_script("return document.querySelector('.verdict').dataset.phase") == "passed"
            value = float(driver.execute_script("return document.querySelector('.verdict .value').textContent"))
            assert 0.05 < value < 0.5
            assert driver.execute_script("return document.querySelector('.verdict .condition').textContent") == "< 0.5"
            assert driver.execute_script("return Array.from(document.querySelectorAll('.wave')).map("
                                         "w => w.dataset.state).join()") == "done,done,pending"
            screenshot(driver, "dashboard-canary.png")

            # who acts: the CLI's pause records it; the page's resume and pause record the same
            assert cli(stepper, "rollout", "pause", "llm", "-n", stepper.namespace, "--reason", "by the CLI")[0] \
                == VerbExit.OK
            who = position(stepper)["paused"]["by"]
            wait_for(driver, "return document.querySelector('.badge').dataset.phase === 'Paused'")
            assert "resumed" in click(driver, "resume", "resumed from the page").lower()
            assert position(stepper)["resumed"] == {**position(stepper)["resumed"], "by": who,
                                                    "reason": "resumed from the page"}
            assert "paused" not in position(stepper)
            wait_for(driver, "return document.querySelector('.badge').dataset.phase !== 'Paused'")
            click(driver, "pause", "paused from the page")
            assert {k: v for k, v in position(stepper)["paused"].items() if k != "at"} == {
                "by": who, "reason": "paused from the page"}
            wait_for(driver, "return document.querySelector('.badge').dataset.phase === 'Paused'")
            click(driver, "resume", "go on")
            wait_for(driver, "return document.querySelector('.badge').dataset.phase !== 'Paused'")

            # the guards: nothing below changes the position
            before = rollout_state(stepper)["metadata"]["resourceVersion"]
            version = driver.execute_script("return document.querySelector('section.set').dataset.version")
            action = {"namespace": stepper.namespace, "name": "llm", "verb": "abort", "reason": "x",
                      "stateVersion": version}
            csrf = driver.execute_script("return document.querySelector('meta[name=disagg-csrf]').content")
            json_headers = {"Content-Type": "application/json", "X-Disagg-CSRF": csrf}
            assert served.request("POST", "/api/action", action, json_headers)[0] == 403  # no token
            assert served.request("POST", f"/api/action?token={served.token}", action, json_headers,
                                  host="attacker.example:80")[0] == 421
            assert served.request("POST", f"/api/action?token={served.token}", action,
                                  {"Content-Type": "application/json"})[0] == 403  # no CSRF token
            stale = {**action, "stateVersion": str(int(before) - 1)}
            status, said = served.request("POST", f"/api/action?token={served.token}", stale, json_headers)
            assert status == 409 and "changed since the page showed it" in said
            assert rollout_state(stepper)["metadata"]["resourceVersion"] == before

            # promote from the page: wave 3 starts, three slices at a time
            assert "promote" in click(driver, "promote", "canary and wave 2 look good").lower()
            passed = position(stepper)["gates"][-1]
            assert (passed["gate"], passed["how"], passed["by"], passed["reason"]) == (
                "pause", "promote", who, "canary and wave 2 look good")
            code, _, err = cli(stepper, "rollout", "step", "llm", "-n", stepper.namespace)
            assert code == StepExit.OK, err
            wait_for(driver, "return Array.from(document.querySelectorAll('.wave')).map("
                             "w => w.dataset.state).join() === 'done,done,in-flight'")

            # an LWS change reaches the page, pushed by the one watch (how fast: make bench)
            name = next(o["metadata"]["name"] for o in stepper.live.lws()
                        if o["metadata"]["labels"][naming.SLICE_LABEL] == "11")
            api = client.CustomObjectsApi(stepper.live.api)
            api.patch_namespaced_custom_object_status(naming.LWS_GROUP, naming.LWS_VERSION, stepper.namespace,
                                                      "leaderworkersets", name, {"status": {"readyReplicas": 0}})
            wait_for(driver, "return document.querySelector('td.cell[data-slice=\"11\"][data-ready=false]')",
                     seconds=10.0)

            # abort from the page: the rollout's revision is drawn as aborted, then rolled back
            assert "abort" in click(driver, "abort", "latency regression in wave 3").lower()
            aborted = position(stepper)["aborted"]
            assert (aborted["by"], aborted["reason"]) == (who, "latency regression in wave 3")
            wait_for(driver, "return document.querySelector('.badge').dataset.phase === 'Aborted'")
            wait_for(driver, "return document.querySelector('td.cell[data-class=aborted]')")
            wait_for(driver, "return document.querySelector('.events tr[data-reason=RolloutAborted]')")
            note = driver.execute_script("return document.querySelector('.events tr[data-reason=RolloutAborted] "
                                         ".note').textContent")
            assert note  # the verb's Event, as the CLI records it
            screenshot(driver, "dashboard-aborted.png")
            with lws_simulator.running(stepper.namespace, delay=0.05, interval=0.05):
                code, _, err = cli(stepper, "rollout", "step", "llm", "-n", stepper.namespace, "--until-complete",
                                   "--timeout", "2m")
            assert code == StepExit.HELD, err  # rolled back, held by the abort
            wait_for(driver, f"return ({CLASSES.removeprefix('return ')}).every(r => r === 'stable,stable')")

            # retry from the page: the aborted rollout starts again from its first wave
            click(driver, "retry", "fixed the regression")
            retried = position(stepper)["retried"]
            assert (retried["by"], retried["reason"]) == (who, "fixed the regression")
            assert driver.execute_script("return window.__pwned") is None
    finally:
        served.close()


@pytest.mark.parametrize("flag", ["--read-only"])
def test_read_only_shows_no_button_and_refuses_every_action(stepper, tmp_path, flag):
    old, new = deployed_then_changed(stepper, tmp_path, {"waves": [{"slices": 1, "pause": {}}]}, slices=2)
    stored(stepper, new)
    served = Served(stepper.control_plane, stepper.namespace, flag)
    try:
        with chromium() as driver:
            driver.get(served.url)
            wait_for(driver, "return document.querySelector('section.set td.cell')")
            assert driver.execute_script("return document.querySelectorAll('button[data-verb]').length") == 0
            csrf = driver.execute_script("return document.querySelector('meta[name=disagg-csrf]').content")
        status, said = served.request("POST", f"/api/action?token={served.token}",
                                      {"namespace": stepper.namespace, "name": "llm", "verb": "abort", "reason": "x",
                                       "stateVersion": ""}, {"Content-Type": "application/json",
                                                             "X-Disagg-CSRF": csrf})
        assert status == 403 and "read-only" in said
    finally:
        served.close()


def test_through_git_the_page_shows_the_committed_position_and_each_verb_s_command_not_a_button(repo):
    deploy(repo, ROLES, slices=4)
    policy_ = {"apiVersion": "kubectl-disagg.x-k8s.io/v1alpha1", "kind": "RolloutPolicy",
               "metadata": {"name": "llm", "namespace": repo.namespace},
               "spec": {"targetRef": {"name": "llm"}, "waves": [{"slices": 1, "pause": {}}]}}
    (repo.root / "policy.yaml").write_text(yaml.safe_dump(policy_, sort_keys=False))
    repo.change_set("new image, a paused canary", ROLES, slices=4, image="img:2")
    served = Served(repo.control_plane, repo.namespace, "--gitops", "-f", str(repo.root))
    try:
        with chromium() as driver:
            driver.get(served.url)
            wait_for(driver, "return document.querySelector('.sync[data-next]')")
            assert driver.execute_script("return document.querySelectorAll('button[data-verb]').length") == 0
            commands = driver.execute_script("return Array.from(document.querySelectorAll('.commands li code')).map("
                                             "c => c.textContent)")
            assert f"kubectl disagg rollout promote --gitops -f {repo.root} --commit --reason '...'" in commands
            before = driver.execute_script("return document.querySelector('.sync').dataset.next")
            repo.advance(1)  # a step committed, then synced: the page follows the cluster's objects
            repo.sync()
            wait_for(driver, "return document.querySelector('td.cell[data-slice=\"0\"][data-class=mixed]')")
            assert before
    finally:
        served.close()
