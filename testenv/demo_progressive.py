"""`make demo-progressive`: a RolloutPolicy with a canary and waves, gated on a real Prometheus.

A set of four slices and its RolloutPolicy (a canary slice gated on analysis, a second wave held
at a manual gate, then the rest) are written into a scratch directory. Debian's Prometheus
scrapes `LatencyExporter` (testenv/prometheus.py: vLLM's latency histograms on loopback, per
set, role, revision and slice); the demo sets each revision's latencies there, as its pods
would serve them. Then, each command echoed:

1. the set deployed at v0.11.0;
2. v0.11.1, whose latencies are good: the canary rolls, its analysis passes (the values shown),
   wave 2 follows and holds at its gate, `rollout promote` lets the rest through;
3. v0.12.0, whose prefill answers in 2 s: the canary rolls, its analysis fails, `onFailure:
   abort` rolls it back, and slices 1-3 are never written (their LeaderWorkerSets compared).
"""

from __future__ import annotations

import contextlib
import shutil
import sys
from pathlib import Path

import yaml

from testenv.controlplane import EXAMPLES_NAMESPACE, ControlPlaneError, run_as_command
from testenv.demo import EXAMPLE, Demo, Playground, banner, demo_main, note
from testenv.prometheus import LatencyExporter, PrometheusServer

SET, DIRECTORY, SLICES = "llama", "progressive", 4
STABLE, GOOD, BAD = "vllm/vllm-openai:v0.11.0", "vllm/vllm-openai:v0.11.1", "vllm/vllm-openai:v0.12.0"
# Seconds per request, as each image's pods serve them: (time to first token, time per output token).
LATENCIES = {STABLE: (0.1, 0.02), GOOD: (0.1, 0.02), BAD: (2.0, 0.02)}
TTFT, TPOT = "vllm:time_to_first_token_seconds", "vllm:time_per_output_token_seconds"
REVISION_LABEL = "disaggregatedset.x-k8s.io/revision"

POLICY = """\
apiVersion: kubectl-disagg.x-k8s.io/v1alpha1
kind: RolloutPolicy
metadata: {{name: llama, namespace: serving}}
spec:
  targetRef: {{name: llama}}
  maxSlicesInFlight: 2
  waves:
  - slices: 1                    # slice 0, the canary
    analysis: [ttft, tpot]       # its own latencies must pass before wave 2 starts
  - slices: 2                    # slice 1 too
    pause: {{}}                    # held until `kubectl disagg rollout promote`
  - slices: "100%"
  onFailure: abort               # a failed analysis rolls the canary back
  analysis:
    prometheus: {{address: "{address}"}}
    checks:
    - name: ttft
      role: prefill
      query: >-
        histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{{
        namespace="{{{{namespace}}}}", set="{{{{set}}}}", role="{{{{role}}}}", revision="{{{{revision}}}}",
        slice=~"{{{{slices}}}}"}}[10s])))
      successCondition: "< 0.5"    # seconds
      interval: 2s
      count: 3
    - name: tpot
      role: decode
      query: >-
        histogram_quantile(0.95, sum by (le) (rate(vllm:time_per_output_token_seconds_bucket{{
        namespace="{{{{namespace}}}}", set="{{{{set}}}}", role="{{{{role}}}}", revision="{{{{revision}}}}",
        slice=~"{{{{slices}}}}"}}[10s])))
      successCondition: "< 0.05"
      interval: 2s
      count: 3
"""


def write_set(directory: Path, image: str) -> None:
    """The bundled example with four slices, one group per role, and `image` in every role."""
    document = yaml.safe_load(EXAMPLE.read_text())
    document["spec"] = {"slices": SLICES, **document["spec"]}
    for role in document["spec"]["roles"]:
        role["spec"]["replicas"] = 1
        for container in role["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]:
            container["image"] = image
    (directory / "llama.yaml").write_text(yaml.safe_dump(document, sort_keys=False))


def serve(demo: Demo, exporter: LatencyExporter, prometheus: PrometheusServer, image: str) -> str:
    """Have the exporter serve `image`'s latencies for the revision the set in DIRECTORY renders,
    in every slice, and wait until Prometheus has counted them. Returns that revision."""
    rendered = yaml.safe_load_all(demo.read(f"kubectl disagg render -f {DIRECTORY}/"))
    revision = next(d["metadata"]["labels"][REVISION_LABEL] for d in rendered if d["kind"] == "LeaderWorkerSet")
    ttft, tpot = LATENCIES[image]
    for slice_ in range(SLICES):
        labels = {"namespace": EXAMPLES_NAMESPACE, "set": SET, "revision": revision, "slice": str(slice_)}
        exporter.set(TTFT, ttft, role="prefill", **labels)
        exporter.set(TPOT, tpot, role="decode", **labels)
    prometheus.wait_for_samples(f'rate({TTFT}_count{{revision="{revision}"}}[10s]) > 0')
    note(f"the exporter serves {image} (revision {revision}) with {ttft}s to the first token "
         f"and {tpot}s per output token")
    return revision


def as_written(demo: Demo, slices: set[int]) -> dict[str, tuple]:
    """name -> what a writer of the set's LeaderWorkerSets in `slices` would change (the uid when it
    recreates one, the generation when it writes the spec, labels, annotations). Not the
    resourceVersion: the real LWS controller writes their status."""
    found = yaml.safe_load(demo.read(f"kubectl get leaderworkersets -n {EXAMPLES_NAMESPACE} -o yaml"))["items"]
    return {o["metadata"]["name"]: (o["metadata"]["uid"], o["metadata"]["generation"], o["metadata"].get("labels"),
                                    o["metadata"].get("annotations"))
            for o in found if int(o["metadata"]["labels"]["disaggregatedset.x-k8s.io/slice"]) in slices}


def change_image(demo: Demo, old: str, new: str) -> None:
    demo.run(f"sed -i 's|{old}|{new}|' {DIRECTORY}/llama.yaml")


def preflight() -> None:
    if shutil.which("prometheus") is None:
        raise ControlPlaneError("prometheus is not on PATH: install Debian's package (hack/prometheus/install.sh "
                                "as root, or apt-get install prometheus)")


def progressive(pg: Playground, scratch: Path, resources: contextlib.ExitStack) -> list[str]:
    demo = Demo(pg, scratch)
    lws = f"kubectl get leaderworkersets -n {EXAMPLES_NAMESPACE} -L {REVISION_LABEL}"
    # Closed after the cluster (make demo-progressive KEEP=1 keeps them up with it).
    exporter = LatencyExporter()
    resources.callback(exporter.close)
    prometheus = PrometheusServer(shutil.which("prometheus") or "prometheus", [exporter.address])
    resources.callback(prometheus.close)
    note(f"Prometheus {prometheus.address} scrapes the latency exporter http://{exporter.address}/metrics "
         "every second")

    banner(f"the set (4 slices) and its RolloutPolicy, in {DIRECTORY}/")
    (scratch / DIRECTORY).mkdir()
    write_set(scratch / DIRECTORY, STABLE)
    (scratch / DIRECTORY / "policy.yaml").write_text(POLICY.format(address=prometheus.address))
    demo.run(f"cat {DIRECTORY}/policy.yaml")
    demo.run(f"kubectl disagg validate -f {DIRECTORY}/")

    banner(f"first deploy: {STABLE} in every slice (a first deploy is not paced)")
    serve(demo, exporter, prometheus, STABLE)
    demo.run(f"kubectl disagg rollout step -f {DIRECTORY}/ --until-complete --timeout 2m")

    banner(f"a good image, {GOOD}: the canary, its analysis, then wave 2 up to its gate")
    change_image(demo, STABLE, GOOD)
    serve(demo, exporter, prometheus, GOOD)
    demo.run(f"kubectl disagg rollout plan -f {DIRECTORY}/")
    demo.run(f"kubectl disagg rollout step -f {DIRECTORY}/ --until-complete --timeout 3m", expect=(7,))
    demo.run(f"kubectl disagg rollout status -f {DIRECTORY}/", expect=(3,))
    demo.run(f"kubectl get rolloutstates -n {EXAMPLES_NAMESPACE}")

    banner("promote: the gate passed by hand, the rest of the slices follow")
    demo.run(f"kubectl disagg rollout promote -f {DIRECTORY}/")
    demo.run(f"kubectl disagg rollout step -f {DIRECTORY}/ --until-complete --timeout 3m")
    demo.run(lws)

    banner(f"a bad image, {BAD}: its prefill takes 2s to the first token")
    untouched = as_written(demo, set(range(1, SLICES)))
    change_image(demo, GOOD, BAD)
    serve(demo, exporter, prometheus, BAD)
    demo.run(f"kubectl disagg rollout step -f {DIRECTORY}/ --until-complete --timeout 3m", expect=(7,))
    # -w --for=complete waits for the rollback's last groups, then says held (7): the set's own
    # revision never rolls out; then it reads Available at the stable revision
    demo.run(f"kubectl disagg rollout status -f {DIRECTORY}/ -w --for=complete --timeout 2m", expect=(7,))
    demo.run(f"kubectl disagg rollout status -f {DIRECTORY}/")
    demo.run(lws)
    after = as_written(demo, set(range(1, SLICES)))
    if after != untouched:
        raise SystemExit(f"demo: slices 1-{SLICES - 1} were written: {untouched} became {after}")
    note(f"slices 1-{SLICES - 1}: the same {len(after)} LeaderWorkerSets, never written (uid, generation, labels "
         "and annotations unchanged); the canary is back at the stable revision")
    return [f"# Prometheus: {prometheus.address}, scraping the exporter http://{exporter.address}/metrics"]

main = demo_main("A RolloutPolicy's canary and waves, gated on a real Prometheus: a good image promoted, "
                 "a bad one caught by analysis and aborted.", progressive, preflight)

if __name__ == "__main__":
    sys.exit(run_as_command("demo-progressive", main))
