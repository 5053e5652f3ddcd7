"""`rollout status -w` as people follow it (issue 39): on a terminal each look redrawn over the
one before, piped only what changed. Over the in-memory cluster, a pass stepped between looks."""

from __future__ import annotations

import io

from kubectl_disagg.exits import StatusExit
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.outcome import STATUS_EXIT
from kubectl_disagg.rollout.status import ClusterLooks, watch_status
from kubectl_disagg.views.status_text import format_reports
from kubectl_disagg.wait import Deadline
from kubectl_disagg.views.status_watch import CLEAR_BELOW, HOME_AND_CLEAR, REDRAW_UP, LookWriter, changed_lines
from tests.fakes.cluster import MemoryCluster, MemorySession
from tests.fakes.printer import Printer
from tests.support.sets import make_set


class OnePassAWatch(MemorySession):
    """Each watch of `status -w` sees one pass of `rollout step` made elsewhere."""

    def __init__(self, ds, cluster):
        super().__init__(cluster)
        self.ds = ds

    def wait_for_change(self, name, namespace, resource_version, timeout, kind="LeaderWorkerSet"):
        self.cluster.settle()
        run.step(ClusterStore(self, [self.ds]), Printer())
        return True


def watched(tty: bool):
    """A 3-slice set rolled from img:1 to img:2 while `status -w` watches it."""
    cluster = MemoryCluster("serving")
    old, ds = make_set({"prefill": 2, "decode": 1}, slices=3), make_set({"prefill": 2, "decode": 1}, "img:2", 3)
    assert run.step(ClusterStore(MemorySession(cluster), [old]), Printer(), run.StepOptions(until_complete=True)) == 0
    looks, stream = [], io.StringIO()
    writer = LookWriter(stream, tty=tty)

    def write(text):
        looks.append(text)
        writer(text)

    watcher = OnePassAWatch(ds, cluster)
    outcome = watch_status(watcher, ClusterLooks(watcher, [ds], None), format_reports, watch=True, write=write,
                           deadline=Deadline.after(30))
    return STATUS_EXIT[outcome], looks, stream.getvalue()


def test_piped_status_w_prints_only_what_changed():
    # Before: every look whole (the command's write was click.echo of each look): 114 lines here.
    code, looks, out = watched(tty=False)
    assert code == StatusExit.AVAILABLE and len(looks) > 4
    whole = sum(len(look.splitlines()) for look in looks)
    # the first look whole, then of each look only the lines the one before did not have
    expected = looks[0] + "".join(f"{line}\n" for before, after in zip(looks, looks[1:])
                                  for line in changed_lines(before.splitlines(), after.splitlines()))
    assert out == expected
    assert len(out.splitlines()) < 0.7 * whole, (len(out.splitlines()), whole)
    assert out.count("slices 0-2 next step: scale leaderworkerset/ac93b51a-prefill 0 → 1") == 1


def test_on_a_terminal_each_look_is_drawn_over_the_one_before(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setenv("LINES", "100")
    code, looks, out = watched(tty=True)
    assert code == StatusExit.AVAILABLE
    redraws = [REDRAW_UP.format(len(before.splitlines())) + CLEAR_BELOW + after
               for before, after in zip(looks, looks[1:])]
    assert out == looks[0] + "".join(redraws)


def test_a_look_taller_than_the_terminal_starts_at_its_top(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setenv("LINES", "5")
    code, looks, out = watched(tty=True)
    assert out == looks[0] + "".join(HOME_AND_CLEAR + look for look in looks[1:])


def test_changed_lines_come_under_their_sets_line():
    before = ["disaggregatedset/a in ns, revision r: Progressing", "  0  rolling", "  1  steady"]
    after = ["disaggregatedset/a in ns, revision r: Progressing", "  0  steady", "  1  steady"]
    assert changed_lines(before, after) == ["disaggregatedset/a in ns, revision r: Progressing", "  0  steady"]
    assert changed_lines(after, after) == []
