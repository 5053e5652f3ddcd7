"""`rollout status` as a library call: each look handed to the caller's view, the exit code from
the table, and -w looking again until Available or the deadline."""

from __future__ import annotations

import time

from kubectl_disagg.exits import StatusExit, StepExit
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.status import watch_status
from tests.fakes.cluster import MemoryCluster, MemorySession
from tests.fakes.printer import Printer
from tests.support.sets import make_set


class Watched(MemorySession):
    """The executor, with the watch a status look sleeps on (nothing ever changes)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.looked_again = 0

    def wait_for_change(self, name, namespace, resource_version, timeout):
        self.looked_again += 1
        return False


def looked(cluster, ds, **kwargs):
    texts = []

    def view(reports, now):
        assert now.endswith("Z")
        return f"{[report.available for report in reports]}\n"

    code = watch_status(cluster, [ds], None, view, write=texts.append, **kwargs)
    return code, texts


def test_not_available_without_watch_is_3_and_one_look():
    cluster, ds = Watched(MemoryCluster("serving")), make_set({"prefill": 2, "decode": 1})
    assert looked(cluster, ds) == (StatusExit.NOT_AVAILABLE, ["[False]\n"])
    assert cluster.looked_again == 0


def test_available_is_0():
    cluster, ds = MemorySession(MemoryCluster("serving")), make_set({"prefill": 2, "decode": 1})
    assert run.step_sets(cluster, [ds], None, None, Printer(), until_complete=True) == StepExit.OK
    assert looked(cluster, ds, watch=True) == (StatusExit.AVAILABLE, ["[True]\n"])


def test_watch_until_the_deadline_is_4():
    cluster, ds = Watched(MemoryCluster("serving")), make_set({"prefill": 2, "decode": 1})
    code, texts = looked(cluster, ds, watch=True, deadline=time.monotonic() + 0.2)
    assert code == StatusExit.TIMEOUT and set(texts) == {"[False]\n"} and cluster.looked_again >= 1
