"""`kubectl disagg render`: what a run loads, by the kind of directory it renders."""

from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
STATE_AND_POLICY = ("kubectl_disagg.gitops.state", "kubectl_disagg.gitops.rules", "kubectl_disagg.core.controller.reconcile",
                    "kubectl_disagg.core.delivery.policy", "kubectl_disagg.core.delivery.promql")

# Runs the console entry in a fresh interpreter and names, at exit, every module of ours it loaded.
PROGRAM = """
import atexit, runpy, sys
atexit.register(lambda: sys.stderr.write("\\nLOADED " + " ".join(sorted(m for m in sys.modules if m.startswith("kubectl_disagg")))))
sys.argv = ["kubectl-disagg", "render", "-f", sys.argv[1]]
runpy.run_module("kubectl_disagg", run_name="__main__")
"""


def loaded_by_render(path: pathlib.Path) -> set[str]:
    run = subprocess.run([sys.executable, "-c", PROGRAM, str(path)], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    return set(run.stderr.rsplit("LOADED ", 1)[1].split())


def test_a_plain_set_renders_without_loading_the_state_and_policy_rules():
    assert sorted(loaded_by_render(ROOT / "examples" / "prefill-decode.yaml") & set(STATE_AND_POLICY)) == []


POLICY = """
apiVersion: kubectl-disagg.x-k8s.io/v1alpha1
kind: RolloutPolicy
metadata: {name: llama, namespace: NAMESPACE}
spec:
  targetRef: {name: llama}
  waves: [{slices: 1}, {slices: "100%"}]
"""


def test_a_policy_beside_the_set_loads_its_reader(tmp_path):
    """The check above can fail: with a RolloutPolicy in the directory, its reader loads."""
    text = (ROOT / "examples" / "prefill-decode.yaml").read_text()
    (tmp_path / "ds.yaml").write_text(text)
    namespace = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.strip().startswith("namespace:"))
    (tmp_path / "policy.yaml").write_text(POLICY.replace("NAMESPACE", namespace))
    loaded = loaded_by_render(tmp_path)
    assert "kubectl_disagg.core.delivery.policy" in loaded


def test_render_of_a_plain_set_never_loads_gitops(tmp_path):
    """`render -f` of inputs with no state file runs below gitops/ (`inputs.directory`): no
    module of the git floor is loaded, and the output is the steady render; a state file beside
    the set sends the same inputs through gitops/."""
    import subprocess
    import sys

    from tests.support.paths import EXAMPLES

    probe = ("import sys\nfrom kubectl_disagg.cli import main\n"
             "try:\n    main(['render', '-f', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('kubectl_disagg.gitops')), file=sys.stderr)\n")
    run = subprocess.run([sys.executable, "-c", probe, str(EXAMPLES / "prefill-decode.yaml")],
                         capture_output=True, text=True, check=True)
    assert run.stderr.strip().splitlines()[-1] == "[]"
    assert "kind: LeaderWorkerSet" in run.stdout
def test_no_revision_services_leaves_out_only_the_prv_services(capsys):
    import yaml
    from tests.support.cli import run
    example = str(ROOT / "examples" / "prefill-decode.yaml")
    code, every, _ = run(["render", "-f", example], capsys)
    assert code == 0
    code, without, _ = run(["render", "-f", example, "--no-revision-services"], capsys)
    assert code == 0
    every_docs, without_docs = list(yaml.safe_load_all(every)), list(yaml.safe_load_all(without))
    assert {d["kind"] for d in every_docs} == {"LeaderWorkerSet", "Service"}
    assert without_docs == [d for d in every_docs if d["kind"] == "LeaderWorkerSet"]
