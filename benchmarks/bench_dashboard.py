"""How fast `rollout dashboard` paints a fleet of 100 slices × 10 roles, and how soon an LWS change
reaches the page, beside the arrival of the watch event itself (issue 50).

Starts a local control plane, deploys a set of 100 slices × 10 roles (1,000 LWS; benchmarks/sets.py)
to steady state and stores the DisaggregatedSet object (the dashboard shows stored sets). Then
runs `kubectl-disagg rollout dashboard` as a child process and opens its page in Debian's
Chromium through Selenium (chromium-driver):

- first paint: from the navigation's start to the end of the page's first drawing of the
  document (every one of the 1,000 cells in the DOM), as the page itself times it
  (`performance.now()` when its first draw ends), one sample per fresh page load;
- change → page: the status of one LWS written (its readyReplicas flipped) through the API
  server; t0 just before the write is sent; `watch` is when this process's own WATCH of the
  namespace's LWS sees the event, `page` when the page's cell for that slice and role shows it
  (a MutationObserver in the page stamps it with the epoch clock this process shares).

Targets: first paint ≤ 1 s, change → page ≤ 1 s (medians; maxima reported beside them).

    python benchmarks/bench_dashboard.py [--samples 20] [--loads 5] [--slices 100] [--roles 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.sets import deploy, document  # noqa: E402
from kubectl_disagg.core.api import naming  # noqa: E402
from kubectl_disagg.core.delivery.sets import load_sets  # noqa: E402
from kubectl_disagg.kube.executor import ClusterExecutor  # noqa: E402
from kubectl_disagg.manifests.reader import parse_stream  # noqa: E402
from testenv.controlplane import ControlPlane  # noqa: E402
from testenv.lws_simulator import LWSSimulator  # noqa: E402

TARGETS = {"first paint": 1.0, "change to page": 1.0}  # seconds, medians
LWS_PATH = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/{}/leaderworkersets"
NAMESPACE = "bench"

OBSERVE = """
const [slice, role, wanted] = arguments;
window.__flipAt = null;
const seen = () => {
  const cell = document.querySelector(`td.cell[data-slice="${slice}"][data-role="${role}"]`);
  if (cell && cell.dataset.ready === wanted && window.__flipAt === null) {
    window.__flipAt = performance.timeOrigin + performance.now();
  }
};
if (window.__observer) window.__observer.disconnect();
window.__observer = new MutationObserver(seen);
window.__observer.observe(document.getElementById('sets'), {subtree: true, childList: true, attributes: true});
"""


def chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--window-size=1400,1000"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)


class WatchArrivals:
    """This process's own WATCH of the namespace's LWS: when each object's event arrived (epoch)."""

    def __init__(self, cp: ControlPlane, namespace: str, version: str):
        self.arrived: dict[tuple[str, str], float] = {}
        self.cp, self.namespace, self.version = cp, namespace, version
        threading.Thread(target=self.run, daemon=True).start()

    def run(self) -> None:
        import http.client
        import ssl
        from urllib.parse import urlsplit

        url = urlsplit(self.cp.server)
        context = ssl.create_default_context(cafile=str(self.cp.ca_file))
        connection = http.client.HTTPSConnection(url.hostname, url.port, context=context, timeout=600)
        connection.request("GET", LWS_PATH.format(self.namespace) + f"?watch=true&resourceVersion={self.version}",
                           headers={"Authorization": f"Bearer {self.cp.token('admin')}"})
        response = connection.getresponse()
        while True:
            line = response.readline()
            if not line:
                return
            event = json.loads(line)
            metadata = event["object"]["metadata"]
            self.arrived[(metadata["name"], metadata["resourceVersion"])] = time.time()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--slices", type=int, default=100)
    parser.add_argument("--roles", type=int, default=10)
    args = parser.parse_args()
    load = os.getloadavg()
    with ControlPlane() as cp, cp.api_client() as api, tempfile.TemporaryDirectory() as tmp:
        cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        manifest = document(NAMESPACE, args.slices, args.roles)
        path = Path(tmp) / "big.yaml"
        path.write_text(json.dumps(manifest))
        (ds,) = load_sets(parse_stream(path.read_text(), str(path)))
        print(f"deploying {args.slices} x {args.roles}...", file=sys.stderr, flush=True)
        with ClusterExecutor(str(cp.kubeconfig)) as cluster:
            deploy(cluster, LWSSimulator(api), ds, NAMESPACE, max_in_flight=64)
        cp.request("POST", f"/apis/{naming.SET_API_VERSION}/namespaces/{NAMESPACE}/disaggregatedsets", manifest)
        served = subprocess.Popen([sys.executable, "-m", "kubectl_disagg", "rollout", "dashboard", "-n", NAMESPACE,
                                   "--port", "0", "--read-only", "--kubeconfig", str(cp.kubeconfig)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert served.stdout is not None
            started = time.monotonic()
            line = served.stdout.readline()
            ready = time.monotonic() - started
            url = line.split(" at ", 1)[1].strip()
            driver = chromium()
            try:
                paints = first_paints(driver, url, args.loads, args.slices * args.roles)
                listed = cp.request("GET", LWS_PATH.format(NAMESPACE))
                watch = WatchArrivals(cp, NAMESPACE, listed["metadata"]["resourceVersion"])
                page, arrivals = changes(cp, driver, watch, listed["items"], args.samples)
            finally:
                driver.quit()
        finally:
            served.terminate()
            served.wait(10)
    report(args, ready, paints, page, arrivals, load)
    return 0


def first_paints(driver, url: str, loads: int, cells: int) -> list[float]:
    out = []
    for _ in range(loads):
        driver.get("about:blank")
        driver.get(url)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            drawn = driver.execute_script("return window.__firstDrawnAt || null")
            if drawn is not None:
                break
            time.sleep(0.01)
        assert driver.execute_script("return document.querySelectorAll('td.cell').length") == cells
        out.append(drawn / 1000)
    return out


def changes(cp: ControlPlane, driver, watch: WatchArrivals, items: list[dict], samples: int
            ) -> tuple[list[float], list[float]]:
    page, arrivals = [], []
    for n in range(samples):
        obj = items[(n * 37) % len(items)]
        name, labels = obj["metadata"]["name"], obj["metadata"]["labels"]
        current = cp.request("GET", LWS_PATH.format(NAMESPACE) + f"/{name}")
        ready = (current.get("status") or {}).get("readyReplicas", 0)
        wanted = "false" if ready else "true"
        replicas = current["spec"].get("replicas", 1)
        driver.execute_script(OBSERVE, labels[naming.SLICE_LABEL], labels[naming.ROLE_LABEL], wanted)
        status = {**(current.get("status") or {}), "readyReplicas": 0 if ready else replicas}
        t0 = time.time()
        written = cp.request("PUT", LWS_PATH.format(NAMESPACE) + f"/{name}/status", {**current, "status": status})
        version = written["metadata"]["resourceVersion"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            flipped = driver.execute_script("return window.__flipAt")
            if flipped is not None and (name, version) in watch.arrived:
                break
            time.sleep(0.005)
        page.append(flipped / 1000 - t0)
        arrivals.append(watch.arrived[(name, version)] - t0)
        time.sleep(0.2)
    return page, arrivals


def report(args, ready: float, paints: list[float], page: list[float], arrivals: list[float], load) -> None:
    def line(label: str, values: list[float], target: float | None) -> str:
        median = statistics.median(values)
        verdict = "" if target is None else ("  ok" if median <= target else f"  OVER {target:.1f} s")
        return f"{label:<34} median {median * 1000:7.0f} ms   max {max(values) * 1000:7.0f} ms   n={len(values)}{verdict}"

    print(f"rollout dashboard, {args.slices} slices x {args.roles} roles ({args.slices * args.roles} LWS); "
          f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"{'start to URL printed (synced)':<34} {ready * 1000:7.0f} ms")
    print(line("first paint (navigation to drawn)", paints, TARGETS["first paint"]))
    print(line("change: watch event arrives", arrivals, None))
    print(line("change: page shows it", page, TARGETS["change to page"]))


if __name__ == "__main__":
    sys.exit(main())
