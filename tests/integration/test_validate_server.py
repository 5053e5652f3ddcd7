"""`validate --server`: every rendered object sent to the real API server as a dry run, each
refusal traced back to the document's FILE:LINE."""

from __future__ import annotations

import copy
import json
import time

import pytest

from kubectl_disagg.cli import main
from tests.support.paths import EXAMPLES
from tests.support.validation import (
    GPU,
    MORE_POD_TEMPLATE_REFUSALS,
    POD_TEMPLATE_REFUSALS,
    WORKER,
    _container_update,
    _mutated,
    _placement,
    _pod_spec_update,
    _template_update,
    _worker_container,
    base,
    errors_of,
)

EXAMPLE = EXAMPLES / "prefill-decode.yaml"


def validate(capsys, control_plane, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["validate", *argv, "--server", "--kubeconfig", str(control_plane.kubeconfig)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return exited.value.code, out, err


def in_namespace(tmp_path, namespace: str, text: str | None = None):
    path = tmp_path / "ds.yaml"
    path.write_text((text or EXAMPLE.read_text()).replace("namespace: serving", f"namespace: {namespace}"))
    return path


def line_of(path, needle: str, occurrence: int = 1) -> int:
    lines = [i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line]
    return lines[occurrence - 1]


def test_a_valid_set_is_accepted_and_nothing_is_stored(capsys, control_plane, namespace, tmp_path):
    path = in_namespace(tmp_path, namespace)
    code, out, err = validate(capsys, control_plane, "-f", str(path))
    assert (code, err) == (0, "")
    assert f"disaggregatedset/llama in {namespace}: valid" in out
    assert ("4 rendered objects accepted by the API server (dry run), with the 4 StatefulSets the LWS "
            "controller makes of them") in out
    stored = json.loads(control_plane.kubectl("get", "leaderworkersets,services", "-n", namespace, "-o", "json").stdout)
    assert stored["items"] == []


def test_an_admission_policy_refusal_names_the_role_it_came_from(capsys, control_plane, namespace, tmp_path):
    """A rule only the cluster knows (a ValidatingAdmissionPolicy): offline valid, refused by the server."""
    name = f"no-groups-{namespace}"
    admission = "/apis/admissionregistration.k8s.io/v1"
    control_plane.request("POST", f"{admission}/validatingadmissionpolicies", {
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["leaderworkerset.x-k8s.io"], "apiVersions": ["*"],
                "operations": ["CREATE", "UPDATE"], "resources": ["leaderworkersets"]}]},
            "validations": [{"expression": "object.spec.leaderWorkerTemplate.size <= 1",
                             "message": "multi-pod groups are not allowed in this namespace",
                             "fieldPath": "spec.leaderWorkerTemplate.size", "reason": "Invalid"}],
        },
    })
    control_plane.request("POST", f"{admission}/validatingadmissionpolicybindings", {
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}},
    })
    path = in_namespace(tmp_path, namespace)
    deadline = time.monotonic() + 30
    while True:  # the API server takes a moment to load a new policy
        code, out, err = validate(capsys, control_plane, "-f", str(path))
        if err.count("denied request") == 2 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert len(lines) == 2  # one LWS per role; the Services are fine
    for role, (name, line) in enumerate(zip(("prefill", "decode"), lines)):
        # The API server names no field for an admission policy's refusal: the role's line it is.
        assert line.startswith(f"{path}:{line_of(path, f'- name: {name}')}: spec.roles[{role}]: "), line
        assert "refused by the API server (leaderworkerset/llama-0-" in line
        assert "multi-pod groups are not allowed in this namespace" in line
    control_plane.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", name,
                          "--ignore-not-found")


def test_a_user_who_may_not_write_gets_one_refusal_per_object(capsys, control_plane, namespace, tmp_path):
    path = in_namespace(tmp_path, namespace)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["validate", "-f", str(path), "--server", "--kubeconfig", str(control_plane.kubeconfig),
              "--context", "viewer"])
    out, err = capsys.readouterr()
    assert exited.value.code == 1 and out == ""
    lines = err.splitlines()
    assert len(lines) == 8 and all("forbidden" in line for line in lines)  # 4 objects, 4 StatefulSets of them
    assert lines[0].startswith(f"{path}:{line_of(path, '- name: prefill')}: spec.roles[0]: refused by the API server")


def test_field_refusals_map_to_the_document_line(control_plane, namespace, tmp_path):
    """What the schema refuses, field by field, traced back through the role to its line."""
    from kubectl_disagg.kube.session import Session
    from kubectl_disagg.kube.client import dry_run_apply
    from tests.support.paths import load_sets
    from kubectl_disagg.core.controller.render import render_set
    from kubectl_disagg.core.controller.server_refusals import refusal_problems

    path = in_namespace(tmp_path, namespace)
    (ds,) = load_sets([str(path)]).sets
    prefill, decode = (o for o in render_set(ds, namespace) if o["kind"] == "LeaderWorkerSet")
    # What offline validation would refuse, sent anyway (server-side apply stops at its first error).
    prefill["spec"]["leaderWorkerTemplate"]["size"] = "two"
    decode["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "lots"}}
    problems = {}
    with Session(kubeconfig=str(control_plane.kubeconfig)) as cluster:
        for lws in (prefill, decode):
            refusal = dry_run_apply(cluster.client, lws)
            assert refusal is not None
            problems.update({p.path: p for p in refusal_problems(ds, lws, refusal)})
    size = problems["spec.roles[0].spec.leaderWorkerTemplate.size"]
    assert (size.file, size.line) == (str(path), line_of(path, "size: 2"))
    gpu = problems.get("spec.roles[1].spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.limits.nvidia.com/gpu")
    assert gpu, list(problems)
    assert gpu.line == line_of(path, "nvidia.com/gpu", 2) and "lots" in gpu.message
    assert all("refused by the API server (leaderworkerset/llama-0-" in p.message for p in problems.values())


def test_characters_beyond_the_basic_plane_and_c1_controls_reach_the_server_intact(capsys, control_plane, namespace, tmp_path):
    """Found by the fuzz campaign: the client's ASCII JSON writes U+1F680 as a surrogate-pair escape,
    which the API server's YAML reader refuses in an apply patch."""
    text = EXAMPLE.read_text().replace("  - name: prefill\n", '  - name: prefill\n    metadata:\n'
                                       '      annotations:\n        example.com/note: "launch \\U0001F680 \\u008b"\n', 1)
    path = in_namespace(tmp_path, namespace, text)
    code, out, err = validate(capsys, control_plane, "-f", str(path))
    assert (code, err) == (0, "") and "4 rendered objects accepted" in out


# --- pod templates as the StatefulSets the LWS controller makes of them ----------------------

def server_problems(cluster, doc: dict, namespace: str) -> list:
    """Every refusal the API server gives the rendered objects of `doc` and the StatefulSets made
    of its LWS (offline validation skipped: the server judges alone), traced to the document."""
    from kubectl_disagg.core.api.model import build_set
    from kubectl_disagg.core.controller.render import render_set
    from kubectl_disagg.core.controller.server_refusals import refusal_problems
    from kubectl_disagg.core.controller.statefulsets import statefulsets
    from kubectl_disagg.kube.client import dry_run_apply
    from kubectl_disagg.manifests.reader import parse_stream
    from kubectl_disagg.manifests.writer import to_yaml

    (document,) = parse_stream(to_yaml(doc), "ds.yaml")
    ds = build_set(document)
    problems = []
    for obj in render_set(ds, namespace):
        for sent in [obj, *(statefulsets(obj) if obj["kind"] == "LeaderWorkerSet" else ())]:
            refusal = dry_run_apply(cluster.client, sent)
            if refusal is not None:
                problems.extend(refusal_problems(ds, sent, refusal))
    return problems


@pytest.fixture(scope="module")
def cluster(control_plane):
    from kubectl_disagg.kube.session import Session
    with Session(kubeconfig=str(control_plane.kubeconfig)) as session:
        yield session


@pytest.mark.parametrize("case", POD_TEMPLATE_REFUSALS, ids=lambda case: case[0])
def test_the_api_server_refuses_each_template_where_we_do(cluster, namespace, case):
    """The LWS of each is accepted; the StatefulSet the LWS controller would make of it is not,
    and the refusal lands on the path (and line) our offline error names."""
    _, mutate, path = case
    doc = _mutated(mutate)
    (ours,) = errors_of(doc)
    problems = server_problems(cluster, doc, namespace)
    assert problems and all("refused by the API server (statefulset/" in p.message for p in problems), problems
    assert path in {p.path for p in problems}, [str(p) for p in problems]
    assert ours.split(": ")[0] in {f"{p.file}:{p.line}" for p in problems if p.path == path}


MUTATIONS = [
    ("no-image", lambda d: _worker_container(d).pop("image")),
    ("empty-image", _container_update(image="")),
    ("env-equals", _container_update(env=[{"name": "A=B", "value": "1"}])),
    ("env-space", _container_update(env=[{"name": "A B", "value": "1"}])),
    ("env-unicode", _container_update(env=[{"name": "Ä", "value": "1"}])),
    ("env-digit", _container_update(env=[{"name": "1A", "value": "1"}])),
    ("gpu-fraction", _container_update(resources={"limits": {GPU: "1.5"}})),
    ("gpu-milli", _container_update(resources={"limits": {GPU: "1m"}})),
    ("gpu-nearly-one", _container_update(resources={"limits": {GPU: "0.9999"}})),
    ("gpu-two", _container_update(resources={"limits": {GPU: "2"}, "requests": {GPU: "2"}})),
    ("gpu-unequal", _container_update(resources={"limits": {GPU: "2"}, "requests": {GPU: "1"}})),
    ("gpu-requests-only", _container_update(resources={"requests": {GPU: "1"}})),
    ("gpu-limits-only", _container_update(resources={"limits": {GPU: "1"}})),
    ("bare-gpu", _container_update(resources={"limits": {"gpu": "1"}})),
    ("requests-prefixed", _container_update(resources={"limits": {"requests.example.com/x": "1"}})),
    ("native-prefixed", _container_update(resources={"limits": {"kubernetes.io/x": "1"}})),
    ("cpu-fraction", _container_update(resources={"limits": {"cpu": "1.5", "memory": "1Gi"}})),
    ("cpu-over-limit", _container_update(resources={"limits": {"cpu": "1"}, "requests": {"cpu": "2"}})),
    ("liveness-empty", _container_update(livenessProbe={})),
    ("readiness-two-handlers", _container_update(readinessProbe={"exec": {"command": ["x"]}, "httpGet": {"port": 80}})),
    ("startup-tcp", _container_update(startupProbe={"tcpSocket": {"port": 80}})),
    ("post-start-empty", _container_update(lifecycle={"postStart": {}})),
    ("pre-stop-sleep", _container_update(lifecycle={"preStop": {"sleep": {"seconds": 1}}})),
    ("restart-never", _pod_spec_update(restartPolicy="Never")),
    ("restart-on-failure", _pod_spec_update(restartPolicy="OnFailure")),
    ("restart-always", _pod_spec_update(restartPolicy="Always")),
    ("leader-empty", _template_update(size=2, leaderTemplate={})),
    ("leader-ok", _template_update(size=2, leaderTemplate=copy.deepcopy(WORKER))),
    ("size-one", _template_update(size=1)),
    ("topology-space", _placement("rack zone")),
    ("topology-two-slashes", _placement("a/b/c")),
    ("topology-zone", _placement("topology.kubernetes.io/zone")),
    ("affinity-key-bad", _pod_spec_update(affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "not a key", "labelSelector": {"matchLabels": {"a": "b"}}}]}})),
]


MUTATIONS += [(name, mutate) for name, mutate, _ in MORE_POD_TEMPLATE_REFUSALS] + [
    ("empty-policies", _container_update(terminationMessagePolicy="", imagePullPolicy="")),
    ("claim-with-storage", _template_update(volumeClaimTemplates=[{"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}])),
]


def test_offline_and_the_server_agree_on_a_fleet_of_templates(cluster, namespace):
    """Seeded combinations of one to three mutations: each refused offline exactly when the API
    server refuses its LWS or the StatefulSets made of it."""
    import random
    generator = random.Random(34)
    cases = [tuple(generator.sample(MUTATIONS, generator.randint(1, 3))) for _ in range(200)]
    cases += [(mutation,) for mutation in MUTATIONS]
    disagree = []
    for combination in cases:
        doc = base()
        for _, mutate in combination:
            mutate(doc)
        ours, theirs = bool(errors_of(doc)), bool(server_problems(cluster, doc, namespace))
        if ours != theirs:
            disagree.append(([name for name, _ in combination], ours, theirs))
    print(f"{len(cases) - len(disagree)} of {len(cases)} templates: offline and server agree")
    assert disagree == []
