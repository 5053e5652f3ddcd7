"""Options and fixtures shared by every test tier (helpers live in tests/support/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import settings

# A property test asserts what holds over its examples, never how fast one ran: hypothesis's
# per-example deadline (200 ms) fails healthy tests on a loaded machine. Speed is make bench's.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite the golden files under tests/data/golden from the current output")
    parser.addoption("--durations-log", metavar="FILE", help="write each test's seconds (setup, call and teardown) "
                     "to FILE as JSON, for hack/test_tiers.py's summary")
    parser.addoption("--schedule-from", metavar="FILE", help="a --durations-log of an earlier run: under "
                     "`--dist loadfile`, the modules that took longest then go to the workers first")


# Test modules that share a session fixture with each other: under pytest-xdist they run on one
# worker, which starts it once (the upstream stack: six processes, 10 to 20 s to start).
SHARED_SESSIONS = {"tests/integration/test_upstream_": "the upstream stack"}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`-n N --dist loadfile` (`make test`, hack/test_tiers.py): a test module runs whole on one
    worker, so its module fixtures (a zipapp built, a Prometheus started, a Go tool built into the
    per-user cache) are made once; and the modules of `SHARED_SESSIONS` run on one worker too.

    Modules go to the workers longest first, as `--schedule-from` (the tier's previous run) timed
    them; modules it does not name come after, most tests first (pytest-xdist's own order). A long
    module handed out last would leave the other workers idle while it runs."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    earlier = config.getoption("schedule_from")
    durations = json.loads(Path(earlier).read_text()).get("durations", {}) if earlier and Path(earlier).is_file() else {}

    seconds: dict[str, float] = {}
    for test, took in durations.items():
        seconds[scope_of(test)] = seconds.get(scope_of(test), 0.0) + took

    class ModulesAndSharedSessions(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

        def _assign_work_unit(self, node) -> None:
            if durations:
                longest = max(self.workqueue, key=lambda scope: seconds.get(scope, 0.0))  # the first of equals
                self.workqueue.move_to_end(longest, last=False)
            super()._assign_work_unit(node)

    return ModulesAndSharedSessions(config, log)


def scope_of(nodeid: str) -> str:
    """What runs whole on one worker: the test's module, or its group of `SHARED_SESSIONS`."""
    module = nodeid.split("::", 1)[0]
    return next((group for prefix, group in SHARED_SESSIONS.items() if module.startswith(prefix)), module)


_durations: dict[str, float] = {}
_outcomes: dict[str, str] = {}  # test id -> passed | failed | skipped | xfailed, as pytest's summary counts it


def pytest_runtest_logreport(report):
    # In the main process, also for the tests pytest-xdist's workers ran.
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration
    if report.failed:  # an error in setup or teardown fails the test too
        _outcomes[report.nodeid] = "failed"
    elif report.skipped and report.nodeid not in _outcomes:
        _outcomes[report.nodeid] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    elif report.passed and report.when == "call":
        _outcomes.setdefault(report.nodeid, "passed")


def pytest_sessionfinish(session):
    log = session.config.getoption("durations_log")
    if log and not hasattr(session.config, "workerinput"):  # the main process writes it
        Path(log).write_text(json.dumps({"durations": _durations, "outcomes": _outcomes}, indent=0, sort_keys=True))
