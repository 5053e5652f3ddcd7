"""`rollout status` as a library call: each look handed to the caller's view, the exit code from
the table, and -w looking again until Available or the deadline."""

from __future__ import annotations


from kubectl_disagg.exits import StatusExit, StepExit
from kubectl_disagg.rollout import run
from kubectl_disagg.rollout.store import ClusterStore
from kubectl_disagg.rollout.outcome import STATUS_EXIT
from kubectl_disagg.rollout.status import ClusterLooks, watch_status
from kubectl_disagg.wait import Deadline
from tests.fakes.cluster import MemoryCluster, MemorySession
from tests.fakes.printer import Printer
from tests.support.sets import make_set


class Watched(MemorySession):
    """The executor, with the watch a status look sleeps on (nothing ever changes)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.looked_again = 0

    def wait_for_change(self, name, namespace, resource_version, timeout, kind="LeaderWorkerSet"):
        self.looked_again += 1
        return False


def looked(cluster, ds, **kwargs):
    texts = []

    def view(reports, now):
        assert now.endswith("Z")
        return f"{[report.available for report in reports]}\n"

    outcome = watch_status(cluster, ClusterLooks(cluster, [ds], None), view, write=texts.append, **kwargs)
    return STATUS_EXIT[outcome], texts


def test_not_available_without_watch_is_3_and_one_look():
    cluster, ds = Watched(MemoryCluster("serving")), make_set({"prefill": 2, "decode": 1})
    assert looked(cluster, ds) == (StatusExit.NOT_AVAILABLE, ["[False]\n"])
    assert cluster.looked_again == 0


def test_available_is_0():
    cluster, ds = MemorySession(MemoryCluster("serving")), make_set({"prefill": 2, "decode": 1})
    assert run.step(ClusterStore(cluster, [ds]), Printer(), run.StepOptions(until_complete=True)) == StepExit.OK
    assert looked(cluster, ds, watch=True) == (StatusExit.AVAILABLE, ["[True]\n"])


def test_watch_until_the_deadline_is_4():
    cluster, ds = Watched(MemoryCluster("serving")), make_set({"prefill": 2, "decode": 1})
    code, texts = looked(cluster, ds, watch=True, deadline=Deadline.after(0.2))
    assert code == StatusExit.TIMEOUT and set(texts) == {"[False]\n"} and cluster.looked_again >= 1


class LastStep(Watched):
    """Available with the drained old revision's LWS still there; the watch sees the rollout's
    last step (what a `rollout step` run elsewhere does) and says something changed."""

    def __init__(self, cluster, ds):
        super().__init__(cluster)
        self.ds = ds

    def wait_for_change(self, name, namespace, resource_version, timeout, kind="LeaderWorkerSet"):
        super().wait_for_change(name, namespace, resource_version, timeout)
        assert run.step(ClusterStore(self, [self.ds]), Printer(), run.StepOptions(until_complete=True)) == StepExit.OK
        return True


def test_issue37_item12_for_complete_waits_past_available_until_the_old_revision_is_removed():
    from kubectl_disagg.core.delivery.status import Until
    from tests.support.sets import available_before_the_last_step

    _, new, memory = available_before_the_last_step()
    cluster = LastStep(memory, new)
    assert looked(cluster, new) == (StatusExit.AVAILABLE, ["[True]\n"])  # today's default, unchanged
    assert looked(cluster, new, until=Until.COMPLETE)[0] == StatusExit.NOT_AVAILABLE
    assert cluster.looked_again == 0
    code, texts = looked(cluster, new, until=Until.COMPLETE, watch=True, deadline=Deadline.after(30))
    assert code == StatusExit.AVAILABLE and texts == ["[True]\n", "[True]\n"] and cluster.looked_again == 1
    assert not [name for name in memory.lws() if new.revision not in name]


def test_issue37_item12_for_takes_kubectls_words_and_its_help_says_what_exit_0_means(capsys):
    from tests.support.paths import EXAMPLES
    from tests.support.cli import run as cli

    code, _, err = cli(["rollout", "status", "-f", str(EXAMPLES / "prefill-decode.yaml"), "--for=ready"], capsys)
    assert code == 2 and "'--for'" in err and "'available', 'complete'" in err
    code, out, _ = cli(["rollout", "status", "--help"], capsys)
    assert code == 0 and "--for [available|complete]" in out and "exit 0 means" in " ".join(out.split())
    # --help names the codes; the CLI reference has their words, --for's among them
    reference = (EXAMPLES.parent / "docs" / "reference" / "cli" / "rollout-status.md").read_text()
    assert "--for=complete: not complete" in reference


class ServicesLast(Watched):
    """The rollout's last step caught half-way, as a watch of the LWS sees it: the old revision's
    LWS removed, its Services (removed after them in the same pass) not yet. The Services go only
    once the watch is of them."""

    def __init__(self, cluster, services):
        super().__init__(cluster)
        self.services, self.kinds = services, []

    def wait_for_change(self, name, namespace, resource_version, timeout, kind="LeaderWorkerSet"):
        self.kinds.append(kind)
        if kind != "Service":
            return False
        for key in self.services:
            self.cluster.objects.pop(key, None)
        return True


def test_for_complete_watches_the_services_when_only_they_are_left_to_remove():
    """The flake this mends: `-w --for=complete` looked between the last step's LWS deletions and
    its Service deletions, then slept on a watch of the LWS, which never changed again."""
    from kubectl_disagg.core.delivery.status import Until
    from tests.support.sets import available_before_the_last_step

    old, new, memory = available_before_the_last_step()
    for key in [key for key in memory.objects if key[0] == "LeaderWorkerSet" and old.revision in key[1]]:
        del memory.objects[key]
    services = [key for key in memory.objects if key[0] == "Service" and old.revision in key[1]]
    assert services
    cluster = ServicesLast(memory, services)
    code, texts = looked(cluster, new, until=Until.COMPLETE, watch=True, deadline=Deadline.after(5))
    assert code == StatusExit.AVAILABLE and cluster.kinds == ["Service"] and len(texts) == 2
