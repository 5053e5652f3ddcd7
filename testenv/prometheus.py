"""A real Prometheus for the analysis tests, scraping a latency exporter the test controls.

`LatencyExporter` (standard library `http.server`) serves vLLM's request latency histograms
(`vllm:time_to_first_token_seconds`, `vllm:time_per_output_token_seconds`,
`vllm:e2e_request_latency_seconds`) per set, namespace, role, revision and slice; a test sets the
latency each series observes (`exporter.set(...)`) and the counters then grow with time, as a
serving pod's do. `PrometheusServer` runs Debian's `prometheus` (2.42) on a free port with a
temporary configuration and data directory, scraping the exporter every second; optionally inside
a network namespace (`NetworkNamespace`, a veth pair, root only), so that the API server, which
refuses to proxy to loopback addresses, can reach it through a Service. Test code only.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from testenv.controlplane import ControlPlaneError, _free_ports, _Process

BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
METRICS = ("vllm:time_to_first_token_seconds", "vllm:time_per_output_token_seconds",
           "vllm:e2e_request_latency_seconds")
LABELS = ("namespace", "set", "role", "revision", "slice")
SCRAPE_INTERVAL = 1  # seconds


class LatencyExporter:
    """Histograms whose every observation is the latency a test set for its series."""

    def __init__(self, host: str = "127.0.0.1", requests_per_second: float = 10.0):
        self._lock = threading.Lock()
        self._series: dict[tuple, tuple[float, float, float]] = {}  # key: (latency, count so far, since)
        self.rate = requests_per_second
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                body = exporter.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self.address = f"{host}:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def set(self, metric: str, seconds: float, **labels: str) -> None:
        """From now on, every request of the series `labels` takes `seconds` for `metric`."""
        key = (metric, tuple(str(labels[name]) for name in LABELS))
        now = time.time()
        with self._lock:
            self._series[key] = (seconds, self._count(key, now), now)

    def _count(self, key: tuple, now: float) -> float:
        latency, count, since = self._series.get(key, (0.0, 0.0, now))
        return count + self.rate * (now - since)

    def exposition(self) -> str:
        """The text exposition format, cumulative buckets per series."""
        now, lines = time.time(), []
        with self._lock:
            series = {key: (value[0], self._count(key, now), value) for key, value in self._series.items()}
        by_metric: dict[str, list] = {}
        for (metric, label_values), (latency, count, _) in sorted(series.items()):
            by_metric.setdefault(metric, []).append((label_values, latency, count))
        for metric, rows in by_metric.items():
            lines.append(f"# TYPE {metric} histogram")
            for label_values, latency, count in rows:
                labels = ",".join(f'{name}="{value}"' for name, value in zip(LABELS, label_values))
                for bound in BUCKETS:
                    lines.append(f'{metric}_bucket{{{labels},le="{bound}"}} {count if latency <= bound else 0:.3f}')
                lines.append(f'{metric}_bucket{{{labels},le="+Inf"}} {count:.3f}')
                lines.append(f"{metric}_sum{{{labels}}} {count * latency:.6f}")
                lines.append(f"{metric}_count{{{labels}}} {count:.3f}")
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class NetworkNamespace:
    """A network namespace joined to this one by a veth pair: `inside` answers from `outside`.

    Needs root (`ip netns`, `ip link`); removed by `close()`.
    """

    def __init__(self, name: str, subnet: str):
        self.name = name
        base = subnet.rsplit(".", 1)[0]
        self.outside, self.inside = f"{base}.1", f"{base}.2"
        self._host_end, self._ns_end = f"{name[:9]}-h", f"{name[:9]}-n"
        try:
            for argv in (["ip", "netns", "add", name],
                         ["ip", "link", "add", self._host_end, "type", "veth", "peer", "name", self._ns_end],
                         ["ip", "link", "set", self._ns_end, "netns", name],
                         ["ip", "addr", "add", f"{self.outside}/30", "dev", self._host_end],
                         ["ip", "link", "set", self._host_end, "up"],
                         ["ip", "netns", "exec", name, "ip", "addr", "add", f"{self.inside}/30", "dev", self._ns_end],
                         ["ip", "netns", "exec", name, "ip", "link", "set", self._ns_end, "up"],
                         ["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"]):
                subprocess.run(argv, check=True, capture_output=True, text=True, timeout=30)
        except subprocess.CalledProcessError as error:
            self.close()
            raise ControlPlaneError(f"{' '.join(error.cmd)}: {error.stderr.strip()}") from None

    def command(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.name, *argv]

    def close(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            subprocess.run(["ip", "link", "del", self._host_end], capture_output=True, timeout=30)
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=30)


class PrometheusServer:
    """Debian's prometheus, scraping `targets` every second, on `host` (inside `netns` if given)."""

    def __init__(self, binary: str, targets: list[str], *, host: str = "127.0.0.1",
                 netns: NetworkNamespace | None = None, start_timeout: float = 60.0):
        self.workdir = Path(tempfile.mkdtemp(prefix="kubectl-disagg-prometheus-"))
        port = 9090 if netns is not None else _free_ports(1)[0]  # a namespace of its own has every port free
        self.host, self.port = host, port
        self.address = f"http://{host}:{port}"
        config = {"global": {"scrape_interval": f"{SCRAPE_INTERVAL}s", "evaluation_interval": "1s"},
                  "scrape_configs": [{"job_name": "vllm", "honor_labels": True,
                                      "static_configs": [{"targets": targets}]}]}
        (self.workdir / "prometheus.yml").write_text(json.dumps(config))
        argv = [binary, f"--config.file={self.workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.workdir / 'data'}", f"--web.listen-address={host}:{port}",
                "--storage.tsdb.retention.time=1h"]
        self._process = _Process("prometheus", netns.command(argv) if netns else argv, self.workdir / "prometheus.log")
        try:
            self._wait_ready(start_timeout, netns)
        except BaseException:
            self.close()
            raise

    def _wait_ready(self, timeout: float, netns: NetworkNamespace | None) -> None:
        deadline = time.monotonic() + timeout
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while True:
            if not self._process.running():
                raise ControlPlaneError(f"prometheus exited while starting:\n{self._process.log_tail()}")
            with contextlib.suppress(OSError):
                with opener.open(f"{self.address}/-/ready", timeout=2) as answer:
                    if answer.status == 200:
                        return
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"prometheus not ready at {self.address} within {timeout:.0f}s:\n"
                                        f"{self._process.log_tail()}")
            time.sleep(0.1)

    def wait_for_samples(self, expression: str, timeout: float = 30.0) -> None:
        """Until `expression` has a sample (the scrapes have begun to count)."""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + timeout
        url = f"{self.address}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                with opener.open(url, timeout=5) as answer:
                    if json.loads(answer.read())["data"]["result"]:
                        return
            time.sleep(0.25)
        raise ControlPlaneError(f"no samples for {expression} within {timeout:.0f}s")

    def close(self) -> None:
        self._process.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

