"""The page in a real browser (Debian's Chromium through Selenium), over the real server and a
document made from the in-memory cluster: hostile text in names and messages is shown, not run;
a new document reaches the page live; an action is sent with its reason, the guard and the CSRF
token, and needs a reason to be sent at all. (On the local control plane, end to end:
tests/integration/test_dashboard.py.)"""

from __future__ import annotations

import copy
import threading
import time

import pytest

from kubectl_disagg.dashboard.server import Answer, Dashboard, Model
from tests.support.browser import chromium

HOSTILE = '<img src=x onerror="window.__pwned=1">"><script>window.__pwned=2</script>'


def document(phase="Paused", note=HOSTILE):
    cells = [{"role": role, "runs": [{"revision": "r2", "class": "new", "replicas": 1, "ready": 1, "name": "x"}],
              "ready": True, "class": "new"} for role in ("prefill", "decode")]
    stable = copy.deepcopy(cells)
    for cell in stable:
        cell["class"] = "stable"
    return {"now": "2026-01-01T00:00:00Z", "mode": "cluster", "scope": "namespace serving", "actions": True,
            "behind": [], "sets": [{
                "key": "serving/" + HOSTILE, "name": HOSTILE, "namespace": "serving", "stateVersion": "41",
                "problem": "", "commands": None, "revision": "r2", "serving": "r2", "available": True,
                "complete": False, "phase": phase, "stable": "r1", "target": "r2", "lines": [HOSTILE],
                "problems": [], "warnings": [], "roles": ["prefill", "decode"],
                "grid": [{"slice": 0, "wave": 1, "cells": cells}, {"slice": 1, "wave": 2, "cells": stable}],
                "waves": [{"wave": 1, "start": 0, "end": 1, "state": "done", "current": True},
                          {"wave": 2, "start": 1, "end": 2, "state": "pending", "current": False}],
                "gate": {"wave": 0, "kind": "pause", "atGate": True, "until": None, "failed": False, "checks": [],
                         "held": HOSTILE, "waitsFor": "promote"},
                "budget": {"inFlight": 0, "max": 1, "done": 1, "slices": 2, "held": 1},
                "paused": {"at": "2026-01-01T00:00:00Z", "by": HOSTILE, "reason": HOSTILE}, "aborted": None,
                "history": [{"revision": "r2", "started": "2026-01-01T00:00:00Z", "by": HOSTILE, "outcome": "Rolling",
                             "ended": "", "endedBy": "", "why": HOSTILE, "back": False, "retry": False}],
                "events": [{"time": "2026-01-01T00:00:00Z", "type": "Normal", "reason": "Paused", "note": note,
                            "regarding": HOSTILE}]}]}


@pytest.fixture
def page():
    acted: list[tuple[str, ...]] = []
    current = {"doc": document()}
    model = Model(lambda: current["doc"])
    dashboard = Dashboard(model, lambda *fields: acted.append(fields) or Answer(200, "promoted " + HOSTILE))
    server = dashboard.bind("127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    with chromium() as driver:
        driver.get(dashboard.url())
        yield driver, dashboard, current, acted
    server.shutdown()
    server.server_close()


def wait_for(driver, script, seconds=5.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"never true: {script}")


def test_hostile_text_is_shown_as_text_and_never_run(page):
    driver, _, _, _ = page
    wait_for(driver, "return document.body.dataset.received")
    assert driver.execute_script("return window.__pwned") is None
    assert driver.execute_script("return document.querySelectorAll('img, script:not([src])').length") == 0
    section = driver.execute_script("return document.querySelector('section.set h2').textContent")
    assert section == HOSTILE
    note = driver.execute_script("return document.querySelector('.events .note').textContent")
    assert note == HOSTILE


def test_a_new_document_reaches_the_page_live(page):
    driver, dashboard, current, _ = page
    wait_for(driver, "return document.body.dataset.received")
    current["doc"] = document(phase="Aborted", note="rolled back")
    dashboard.model.refresh()  # pushed, not polled (how fast: make bench, beside the watch's own arrival)
    wait_for(driver, "return document.querySelector('.badge').dataset.phase === 'Aborted'")
    assert driver.execute_script("return document.querySelector('.events .note').textContent") == "rolled back"


def test_an_action_needs_a_reason_and_sends_it_with_the_guard(page):
    driver, _, _, acted = page
    wait_for(driver, "return document.querySelector('button[data-verb=promote]')")
    button = driver.find_element("css selector", "button[data-verb=promote]")
    assert not button.is_enabled()  # no reason yet
    driver.find_element("css selector", "input[data-reason-for]").send_keys("canary looks good")
    assert button.is_enabled()
    button.click()
    wait_for(driver, "return !document.getElementById('notice').hidden")
    assert acted == [("serving", HOSTILE, "promote", "canary looks good", "41")]
    assert driver.execute_script("return document.getElementById('notice').textContent") == "promoted " + HOSTILE
    assert driver.execute_script("return window.__pwned") is None


def fleet_document(slices=100, roles=10, sets=1):
    """The page's document of `sets` copies of a held canary over slices × roles (in memory)."""
    from kubectl_disagg.clock import SYSTEM_CLOCK
    from kubectl_disagg.core.delivery.policy import RolloutPolicy, Wave
    from kubectl_disagg.dashboard.looks import look_at
    from kubectl_disagg.exits import StepExit
    from kubectl_disagg.rollout import run
    from kubectl_disagg.rollout.store import ClusterStore
    from kubectl_disagg.views.dashboard import page_document
    from kubectl_disagg.wait import Deadline
    from tests.fakes.paced import NS, PacedCluster, Printer
    from tests.support.sets import fleet

    memory, ds = fleet(slices, RolloutPolicy("llm", NS, "llm", (Wave(1, pause=True), Wave("10%", pause=True)), 10),
                       {f"role{i}": 1 for i in range(roles)})
    cluster = PacedCluster(memory)
    code = run.step(ClusterStore(cluster, [ds]), Printer(),
                    run.StepOptions(until_complete=True, deadline=Deadline.after(120)))
    assert code == StepExit.HELD
    look = look_at(cluster, ds, NS, SYSTEM_CLOCK)
    from dataclasses import replace

    looks = [replace(look, name=f"llm-{n:02d}" if sets > 1 else "llm") for n in range(sets)]
    return page_document(looks, "2026-01-01T00:00:00Z", scope=f"namespace {NS}")


def test_a_fleet_of_100_slices_by_10_roles_is_drawn_whole_and_stays_readable():
    from tests.support.browser import screenshot

    document_ = fleet_document()
    dashboard = Dashboard(Model(lambda: document_), None)
    server = dashboard.bind("127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        with chromium(1400, 900) as driver:
            driver.get(dashboard.url())
            wait_for(driver, "return window.__firstDrawnAt", seconds=10)  # its time: make bench
            assert driver.execute_script("return document.querySelectorAll('td.cell').length") == 1000
            # every role's column fits the window: no sideways scrolling to find a role
            assert driver.execute_script("return document.querySelector('table.grid').getBoundingClientRect().right")\
                <= 1400
            assert driver.execute_script("return document.querySelectorAll('th.wave-band.boundary').length") == 2
            # roles down, slices across: the whole fleet in one screen, no scrolling
            assert driver.execute_script("return document.querySelector('table.grid').getBoundingClientRect().bottom")\
                <= 900
            screenshot(driver, "dashboard-fleet.png")
    finally:
        server.shutdown()
        server.server_close()


def test_twenty_sets_each_get_an_entry_in_the_index():
    document_ = fleet_document(slices=12, roles=2, sets=20)
    dashboard = Dashboard(Model(lambda: document_), None)
    server = dashboard.bind("127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        with chromium() as driver:
            driver.get(dashboard.url())
            wait_for(driver, "return document.querySelectorAll('section.set').length === 20")
            assert driver.execute_script("return document.querySelectorAll('nav.index a').length") == 20
    finally:
        server.shutdown()
        server.server_close()


def test_a_soak_counts_down_and_a_watch_behind_is_said(page):
    import datetime

    driver, dashboard, current, _ = page
    wait_for(driver, "return document.body.dataset.received")
    until = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=5)).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    doc = document()
    doc["sets"][0]["gate"].update({"until": until, "waitsFor": "soak"})
    doc["behind"] = [{"kind": "LeaderWorkerSet", "namespace": "serving", "since": "2026-01-01T00:00:00Z",
                      "why": "connection reset"}]
    current["doc"] = doc
    dashboard.model.refresh()
    wait_for(driver, "return document.querySelector('.soak')")
    first = driver.execute_script("return document.querySelector('.soak').textContent")
    assert first.startswith("soak: 4m") or first.startswith("soak: 5m")
    wait_for(driver, f"return document.querySelector('.soak').textContent !== {first!r}", seconds=3)
    assert driver.execute_script("return document.getElementById('connection').dataset.state") == "behind"
    said = driver.execute_script("return document.getElementById('behind').textContent")
    assert said == "behind: LeaderWorkerSet in serving since 2026-01-01T00:00:00Z: connection reset"
