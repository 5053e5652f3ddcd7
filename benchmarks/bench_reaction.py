"""How fast `rollout step --until-complete` reacts: the last LWS of a step ready → its next write.

Starts a local control plane and deploys the 2-role example (examples/prefill-decode.yaml, 4
objects) and a set of 100 slices × 10 roles (2,000 objects) to steady state. Then, per size,
changes the pod template and runs `rollout step --until-complete` as a child process: the
installed CLI's `main`, through benchmarks/step_phases.py, which writes the stepper's timeline
(watch, LISTs, decoding, reconcile, access reviews, lease, writes) to a file. This process
plays the LWS controller instead of the free-running simulator:

- it watches the namespace's LWS and Services (one WATCH each) and tells the stepper's writes
  (a create, a delete, a change of generation, labels or annotations) from status writes;
- once the stepper waits (its timeline: in a watch, after a read that saw every earlier
  status write), it settles the status of every LWS that needs it (as testenv/lws_simulator.py
  writes it) but one, the step's target-revision LWS of the highest slice and last role; it
  waits until the stepper waits again, then writes that one;
- t0 = just before that last status write is sent; t1 = arrival here of the watch event of the
  stepper's first write after it. Reaction = t1 − t0, one sample per step that waits for status;
  a sample whose first write is in another slice than the held-back LWS is dropped (counted).

Rollouts repeat (image 1, 2, ...) until each size has enough samples. Targets (issue 14):
median ≤ 100 ms at 4 objects, ≤ 500 ms at 2,000.

    python benchmarks/bench_reaction.py [--samples-small 20] [--samples-large 5] [--slices 100]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from benchmarks.sets import deploy, document, with_image  # noqa: E402
from kubectl_disagg.core.api import naming  # noqa: E402
from kubectl_disagg.kube.executor import ClusterExecutor  # noqa: E402
from kubectl_disagg.core.delivery.sets import load_sets  # noqa: E402
from kubectl_disagg.manifests.reader import parse_stream  # noqa: E402
from kubectl_disagg.core.api.model import DisaggregatedSet  # noqa: E402
from kubectl_disagg.rollout.write_scheduler import DEFAULT_MAX_IN_FLIGHT  # noqa: E402
from testenv.controlplane import ControlPlane  # noqa: E402
from testenv.lws_simulator import LWSSimulator  # noqa: E402

EXAMPLE = ROOT / "examples" / "prefill-decode.yaml"
TARGETS = {"small": 0.100, "large": 0.500}  # median reaction, seconds
LWS_PATH = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/{}/leaderworkersets"
SERVICE_PATH = "/api/v1/namespaces/{}/services"
REACTION_TIMEOUT = 120.0  # a stepper that has not written this long after t0 is stuck


@dataclass(frozen=True)
class Write:
    """A stepper write, as its watch event arrived here."""

    at: float  # time.monotonic() of the event's arrival
    kind: str
    event: str  # ADDED, MODIFIED, DELETED
    name: str
    slice: str


class NamespaceWatch:
    """The set's LWS and Services in one namespace, kept current by two WATCHes (threads).

    Holds the latest LWS objects (what the status writes start from) and the stepper's writes in
    arrival order. Status writes change neither generation nor metadata: they are not counted.
    """

    def __init__(self, cp: ControlPlane, namespace: str, set_name: str):
        self._cp, self._selector = cp, f"{naming.NAME_LABEL}={set_name}"
        self.changed = threading.Condition()  # guards lws and writes
        self.lws: dict[str, dict] = {}
        self.writes: list[Write] = []
        self._stopping = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(path.format(namespace), kind), daemon=True)
                         for path, kind in ((LWS_PATH, "LeaderWorkerSet"), (SERVICE_PATH, "Service"))]
        self._ready = threading.Barrier(len(self._threads) + 1)
        for thread in self._threads:
            thread.start()
        self._ready.wait(timeout=60)

    def close(self) -> None:
        self._stopping.set()

    def _run(self, path: str, kind: str) -> None:
        listed = self._cp.request("GET", f"{path}?labelSelector={quote(self._selector)}")
        version = listed["metadata"]["resourceVersion"]
        if kind == "LeaderWorkerSet":
            with self.changed:
                self.lws = {o["metadata"]["name"]: o for o in listed["items"]}
        self._ready.wait(timeout=60)
        url = urlsplit(self._cp.server)
        context = ssl.create_default_context(cafile=str(self._cp.ca_file))
        while not self._stopping.is_set():
            connection = http.client.HTTPSConnection(url.hostname, url.port, context=context, timeout=600)
            connection.request("GET", f"{path}?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&"
                                      f"resourceVersion={version}&labelSelector={quote(self._selector)}",
                               headers={"Authorization": f"Bearer {self._cp.token()}"})
            response = connection.getresponse()
            if response.status != 200:
                raise RuntimeError(f"watch {path}: {response.status} {response.read()[:500]!r}")
            while line := response.readline():
                arrived = time.monotonic()
                event = json.loads(line)
                obj = event["object"]
                version = obj["metadata"]["resourceVersion"]
                if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                    self._record(arrived, kind, event["type"], obj)
            connection.close()

    def _record(self, arrived: float, kind: str, event: str, obj: dict) -> None:
        metadata = obj["metadata"]
        name = metadata["name"]
        with self.changed:
            if kind == "LeaderWorkerSet":
                before = self.lws.get(name)
                if event == "DELETED":
                    self.lws.pop(name, None)
                else:
                    self.lws[name] = obj
                ours = event != "MODIFIED" or before is None or _shape(before) != _shape(obj)
            else:
                ours = True  # nobody but the stepper writes the set's Services here
            if ours:
                self.writes.append(Write(arrived, kind, event, name, (metadata.get("labels") or {}).get(
                    naming.SLICE_LABEL, "")))
            self.changed.notify_all()

    def first_write_after(self, index: int, stepper: subprocess.Popen, timeout: float) -> Write | None:
        """The first stepper write recorded at `index` or later; None when the stepper exits first."""
        give_up = time.monotonic() + timeout
        with self.changed:
            while len(self.writes) <= index:
                if stepper.poll() is not None or time.monotonic() > give_up:
                    return None
                self.changed.wait(0.1)
            return self.writes[index]


def _shape(lws: dict) -> tuple:
    """What a stepper write changes and a status write does not."""
    metadata = lws["metadata"]
    return metadata.get("generation"), metadata.get("labels"), metadata.get("annotations")


class StepperTrace:
    """The stepper's timeline as step_phases.py writes it, read as it grows."""

    IDLE_FOR = 0.2  # a watch from an RV older than a write returns at once: one that lasts is real

    def __init__(self, path: Path):
        self.path, self.records, self._offset = path, [], 0

    def read(self) -> list[dict]:
        if self.path.exists():
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
            complete = data[:data.rfind(b"\n") + 1]
            self._offset += len(complete)
            self.records += [json.loads(line) for line in complete.splitlines()]
        return self.records

    def idle(self, since: float) -> bool:
        """Waiting in a watch for a while, after a pass whose read started at `since` or later."""
        records = self.read()
        if not records or records[-1]["what"] != "watch" or records[-1]["end"] is not None:
            return False
        read = max((r["start"] for r in records if r["what"] == "snapshot"), default=-1.0)
        return read >= since and time.monotonic() - records[-1]["start"] >= self.IDLE_FOR

    def wait_idle(self, since: float, stepper: subprocess.Popen, limit: float = 900.0) -> bool:
        """Until the stepper waits, having read everything written before `since`; False if it exits."""
        give_up = time.monotonic() + limit
        while not self.idle(since):
            if stepper.poll() is not None:
                return False
            if time.monotonic() > give_up:
                raise RuntimeError(f"the stepper did not go idle within {limit:.0f} s")
            time.sleep(0.02)  # the harness polls the file; the stepper itself only watches
        return True


@dataclass
class Samples:
    reactions: list[float]
    moments: list[tuple[float, float]] = field(default_factory=list)  # (t0, t1) of each reaction
    invalid: int = 0
    rollouts: int = 0


def play_controller(watch: NamespaceWatch, trace: StepperTrace, simulator: LWSSimulator, ds: DisaggregatedSet,
                    stepper: subprocess.Popen, started: float, samples: Samples) -> None:
    """Settle status for the stepper, step after step, timing its reaction to the last LWS of each."""
    order = {name: index for index, name in enumerate(ds.role_names)}
    pool = ThreadPoolExecutor(4)
    since = started
    while trace.wait_idle(since, stepper):
        with watch.changed:
            pending = [o for o in watch.lws.values() if simulator.pending(o)]
        if not pending:
            raise RuntimeError("the stepper waits, but no LWS waits for status")
        gating = [o for o in pending if o["metadata"]["labels"].get(naming.REVISION_LABEL) == ds.revision]
        held = max(gating, key=lambda o: (int(o["metadata"]["labels"][naming.SLICE_LABEL]),
                                          order.get(o["metadata"]["labels"].get(naming.ROLE_LABEL), 0)),
                   default=None)
        others = [o for o in pending if o is not held]
        if others:
            since = time.monotonic()
            list(pool.map(simulator.settle, others))
            if held is None or not trace.wait_idle(since, stepper):
                continue
        with watch.changed:
            mark = len(watch.writes)
        since = t0 = time.monotonic()
        simulator.settle(held)
        write = watch.first_write_after(mark, stepper, REACTION_TIMEOUT)
        if write is None:
            if stepper.poll() is None:
                raise RuntimeError(f"the stepper did not write within {REACTION_TIMEOUT:.0f} s of the last status")
            return  # the last status let the rollout complete without a write
        if write.slice and write.slice != held["metadata"]["labels"][naming.SLICE_LABEL]:
            samples.invalid += 1
        else:
            samples.reactions.append(write.at - t0)
            samples.moments.append((t0, write.at))


def measure(cp: ControlPlane, simulator: LWSSimulator, workdir: Path, namespace: str, manifest: dict,
            wanted: int, stepper_argv: list[str]) -> tuple[Samples, str]:
    """Rollouts until `wanted` reactions are timed: the samples, and the stepper's timeline."""
    cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    manifest = {**manifest, "metadata": {**manifest["metadata"], "namespace": namespace}}
    with ClusterExecutor(str(cp.kubeconfig), "admin") as cluster:
        deploy(cluster, simulator, load(workdir, manifest, "deployed"), namespace, DEFAULT_MAX_IN_FLIGHT)
    samples = Samples([])
    watch = NamespaceWatch(cp, namespace, manifest["metadata"]["name"])
    trace = StepperTrace(workdir / f"{namespace}-trace.jsonl")
    launcher = [sys.executable, str(ROOT / "benchmarks" / "step_phases.py")]
    try:
        while len(samples.reactions) < wanted:
            samples.rollouts += 1
            path = workdir / f"{namespace}-{samples.rollouts}.yaml"
            path.write_text(yaml.safe_dump(with_image(manifest, f"img:{samples.rollouts + 1}")))
            ds = load(workdir, yaml.safe_load(path.read_text()), f"rollout-{samples.rollouts}")
            started = time.monotonic()
            err = path.with_suffix(".err")  # a file, not a pipe: its progress lines must never block it
            with err.open("wb") as err_file:
                stepper = subprocess.Popen([*launcher, str(trace.path), *stepper_argv, "-f", str(path)],
                                           stdout=subprocess.DEVNULL, stderr=err_file)
            try:
                play_controller(watch, trace, simulator, ds, stepper, started, samples)
                stepper.wait(timeout=REACTION_TIMEOUT)
            finally:
                if stepper.poll() is None:
                    stepper.kill()
                    stepper.wait()
            if stepper.returncode != 0:
                raise RuntimeError(f"rollout step exited {stepper.returncode}: {err.read_text()[-2000:]}")
            print(f"  {namespace}: rollout {samples.rollouts}, {len(samples.reactions)} samples "
                  f"({samples.invalid} dropped)",
                  file=sys.stderr, flush=True)
    finally:
        watch.close()
    return samples, trace.path.read_text()


def load(workdir: Path, manifest: dict, label: str) -> DisaggregatedSet:
    path = workdir / f"{manifest['metadata']['namespace']}-{label}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    (ds,) = load_sets(parse_stream(path.read_text(), str(path)))
    return ds


def breakdown(trace: list[dict], t0: float, t1: float) -> dict[str, float]:
    """Where one reaction went, from step_phases.py's timeline of the stepper (seconds)."""
    def calls(what: str, start: float, end: float) -> list[dict]:
        return [c for c in trace if c["what"] == what and c["end"] is not None and start <= c["start"]
                and c["end"] <= end]

    def first(what: str, after: float) -> dict | None:
        return min((c for c in trace if c["what"] == what and c["start"] >= after), key=lambda c: c["start"],
                   default=None)

    write = first("write", t0)
    if write is None:
        return {}
    wake = min((c["end"] for c in trace if c["what"] == "watch" and c["end"] is not None
                and t0 <= c["end"] <= write["start"]), default=t0)
    snapshot = first("snapshot", wake) or {"start": wake, "end": wake}
    lists = calls("list", snapshot["start"], snapshot["end"])
    listed = max((c["end"] for c in lists), default=snapshot["start"])
    reconcile = first("reconcile", snapshot["end"]) or {"start": 0.0, "end": 0.0}
    phases = {
        "status write sent → the stepper's watch returns": wake - t0,
        "snapshot: the LISTs (requests, bytes, JSON decoding), start to last answer": listed - snapshot["start"],
        "snapshot: building it from the objects": snapshot["end"] - listed,
        "reconcile": reconcile["end"] - reconcile["start"],
        "authorize (SelfSubjectAccessReviews)": sum(c["end"] - c["start"]
                                                    for c in calls("authorize", wake, write["start"])),
        "lease renewal": sum(c["end"] - c["start"] for c in calls("lease renewal", wake, write["start"])),
    }
    phases["anything else before the first write"] = write["start"] - t0 - sum(phases.values())
    phases["first write sent → its watch event here"] = t1 - write["start"]
    phases["(of the LISTs: JSON decoding)"] = sum(c["end"] - c["start"] for c in calls(
        "decode", snapshot["start"], snapshot["end"]))
    phases["access reviews sent"] = len(calls("access review", wake, write["start"]))
    phases["LISTs sent"] = len(lists)  # 1 when the watched LWS view held (Services only), 2 when not
    return phases


_COUNTS = ("access reviews sent", "LISTs sent")  # breakdown rows that are counts, not seconds


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def report_phases(label: str, timeline: str, samples: Samples) -> None:
    trace = [json.loads(line) for line in timeline.splitlines()]
    rows = [b for b in (breakdown(trace, t0, t1) for t0, t1 in samples.moments) if b]
    if not rows:
        return
    print(f"\nWhere the reaction goes, {label} (the stepper's timeline, median of "
          f"{len(rows)} samples):\n")
    print("| phase | ms |")
    print("|---|--:|")
    for name in rows[0]:
        value = statistics.median(r[name] for r in rows)
        print(f"| {name} | {value:g} |" if name in _COUNTS else f"| {name} | {value * 1000:.1f} |")
    print(f"| **reaction** | **{statistics.median(samples.reactions) * 1000:.0f}** |")


def report(results: list[tuple[str, str, int, Samples]], load_before: tuple[float, ...], uptime: str) -> None:
    print(f"\n#### `rollout step --until-complete`: reaction to the last LWS of a step ({platform.machine()}, "
          f"{platform.python_implementation()} {platform.python_version()}, load average before "
          f"{load_before[0]:.1f})\n")
    print(f"`uptime` before: `{uptime}`\n")
    print("| set | objects | samples (rollouts) | median ms | p90 ms | max ms | min ms | dropped |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    verdicts = []
    for label, size, objects, s in results:
        ms = [r * 1000 for r in s.reactions]
        median = statistics.median(ms)
        print(f"| {label} | {objects:,} | {len(ms)} ({s.rollouts}) | {median:.0f} | {percentile(ms, 0.9):.0f} | "
              f"{max(ms):.0f} | {min(ms):.0f} | {s.invalid} |")
        target = TARGETS[size] * 1000
        verdicts.append(f"- {'PASS' if median <= target else 'FAIL'}  {objects:,} objects: reaction median "
                        f"≤ {target:.0f} ms: {median:.0f} ms")
    print()
    print("\n".join(verdicts))
    print("\nReaction = arrival here of the watch event of the stepper's first write − the moment just "
          "before the status write of the step's last LWS was sent. Dropped: samples whose first "
          "write was in another slice (the stepper was still busy with earlier status).")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples-small", type=int, default=20)
    parser.add_argument("--samples-large", type=int, default=5)
    parser.add_argument("--slices", type=int, default=100)
    parser.add_argument("--only", choices=("small", "large"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    example = yaml.safe_load(EXAMPLE.read_text())
    sizes = [("2-role example (examples/prefill-decode.yaml)", "small", example, args.samples_small),
             (f"{args.slices} slices × 10 roles", "large", document("", args.slices, 10), args.samples_large)]
    results, timelines = [], []
    with ControlPlane() as cp, cp.api_client() as api, tempfile.TemporaryDirectory() as tmp:
        simulator = LWSSimulator(api)
        argv = ["rollout", "step", "--until-complete", "--timeout", "30m", f"--kubeconfig={cp.kubeconfig}",
                "--context=admin", "-o", "json"]
        for label, size, manifest, wanted in sizes:
            if args.only and size != args.only:
                continue
            print(f"measuring {label}...", file=sys.stderr, flush=True)
            samples, timeline = measure(cp, simulator, Path(tmp), f"reaction-{size}", manifest, wanted, argv)
            objects = len(manifest["spec"]["roles"]) * 2 * manifest["spec"].get("slices", 1)  # an LWS + a Service each
            results.append((label, size, objects, samples))
            timelines.append((label, samples, timeline))
    report(results, load_before, uptime)
    for label, samples, timeline in timelines:
        report_phases(label, timeline, samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
