"""The project's CRDs against the upstream ones, on the real API server.

Every example and every golden file is accepted by both CRD sets (server-side dry run, strict
field validation), and the server's defaults give the revision kubectl-disagg computes; the bad
inputs of the validation tests that an API server can catch are refused by the project's
DisaggregatedSet CRD too. Each CRD set gets its own control plane unless the session's already
serves it; the upstream set skips without ../shared/crds (and fails under CI=true).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest
import yaml

from kubectl_disagg.core.delivery.sets import load_sets
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml, to_yaml_stream
from testenv.controlplane import PROJECT_CRDS, ControlPlane
from tests.support.paths import EXAMPLES, GOLDEN, require_crds
from tests.support.paths import session_crds
from tests.support.validation import SCHEMA_VERDICTS, WORKER, base, errors_of

MANIFESTS = sorted(EXAMPLES.glob("*.yaml")) + sorted(GOLDEN.glob("*.yaml"))


def namespaces_of(paths: list[Path]) -> set[str]:
    found = {"default"}
    for path in paths:
        found |= {d["metadata"].get("namespace", "default") for d in yaml.safe_load_all(path.read_text()) if d}
    return found


@pytest.fixture(scope="module")
def planes(control_plane):
    """Control planes by CRD set, started once per module (the session's where it serves that set)."""
    started: dict[str, ControlPlane] = {}
    own: list[ControlPlane] = []

    def plane(which: str) -> ControlPlane:
        if which not in started:
            wanted = PROJECT_CRDS if which == "project" else (require_crds(),)
            if tuple(map(Path, wanted)) == tuple(map(Path, session_crds())):
                cp = control_plane
            else:
                cp = ControlPlane(crds=wanted, bin_dir=control_plane.bin_dir)
                own.append(cp)
                cp.start()
            for namespace in namespaces_of(MANIFESTS):
                try:
                    cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
                except urllib.error.HTTPError as err:
                    if err.code != 409:  # already there
                        raise
            started[which] = cp
        return started[which]

    yield plane
    for cp in own:
        cp.stop()


@pytest.fixture(params=["project", "upstream"])
def crd_plane(request, planes):
    return planes(request.param)


def dry_run_apply(cp, text: str):
    return cp.kubectl("apply", "--server-side", "--dry-run=server", "--validate=strict",
                      "--field-manager=crd-test", "-o", "json", "-f", "-", input=text, check=False)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_examples_and_golden_files_are_accepted(crd_plane, path):
    cp = crd_plane
    result = dry_run_apply(cp, path.read_text())
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no warning either (an unknown field would be one under Warn)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_server_defaults_keep_the_revision(crd_plane, path):
    # The CRD's defaults are the ones kubectl-disagg applies before hashing: the object the API
    # server would store has the revision of the file it came from.
    cp = crd_plane
    result = dry_run_apply(cp, path.read_text())
    assert result.returncode == 0, result.stderr
    stored = json.loads(result.stdout)
    stored = stored["items"] if stored.get("kind") == "List" else [stored]
    for obj in stored:
        for key in ("managedFields", "creationTimestamp", "uid", "generation", "resourceVersion"):
            obj["metadata"].pop(key, None)
    from_file = load_sets(parse_stream(path.read_text(), path.name))
    from_server = load_sets(parse_stream(to_yaml_stream(stored), "server"))
    assert [s.revision for s in from_server] == [s.revision for s in from_file]
    assert all(s.slices >= 1 for s in from_server)


def _set(path: tuple, value):
    def mutate(doc):
        target = doc
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
    return mutate


def _delete(path: tuple):
    def mutate(doc):
        target = doc
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]
    return mutate


def _roles(count):
    return _set(("spec", "roles"), [{"name": f"r{i}", "spec": {"leaderWorkerTemplate": {"workerTemplate": WORKER}}}
                                    for i in range(count)])


def _rolling(index, **config):
    return _set(("spec", "roles", index, "spec", "rolloutStrategy"), {"rollingUpdateConfiguration": config})


def _all(*mutations):
    def mutate(doc):
        for m in mutations:
            m(doc)
    return mutate


def _annotated(where):
    annotation = {"leaderworkerset.sigs.k8s.io/exclusive-topology": "rack"}
    placement = _set(("spec", "placementPolicy"), {"type": "ExclusiveTopology", "topology": "zone"})
    if where == "role":
        return _all(placement, _set(("spec", "roles", 0, "metadata"), {"annotations": annotation}))
    template = {**copy.deepcopy(WORKER), "metadata": {"annotations": annotation}}
    return _all(placement, _set(("spec", "roles", 0, "spec", "leaderWorkerTemplate", f"{where}Template"), template))


TEMPLATE = ("spec", "roles", 0, "spec", "leaderWorkerTemplate", "workerTemplate")
CONTAINER = (*TEMPLATE, "spec", "containers", 0)

# (id, mutation of tests.unit.core.test_validation.base(), what the API server's refusal says).
# Not here, because the CRDs type pod templates as k8s.io/api does and pod validation runs only
# when the LWS controller creates the pods: an empty containers list, which kubectl-disagg
# refuses offline (tests/integration/test_api_verdicts.py holds those cases against a Pod).
BAD_INPUTS = [
    ("apiVersion", _set(("apiVersion",), "disaggregatedset.x-k8s.io/v1alpha1"), "no matches for kind"),
    ("kind", _set(("kind",), "DisaggregatedSett"), "no matches for kind"),
    ("name-required", _delete(("metadata", "name")), "metadata.name: Required value"),
    ("name-uppercase", _set(("metadata", "name"), "My-LLM"), "RFC 1123"),
    ("name-underscore", _set(("metadata", "name"), "llm_1"), "RFC 1123"),
    ("name-dash", _set(("metadata", "name"), "-llm"), "RFC 1123"),
    ("name-too-long", _set(("metadata", "name"), "a" * 254), "253"),
    ("name-dot", _set(("metadata", "name"), "my.llm"), "DNS-1035"),
    ("name-digit", _set(("metadata", "name"), "1llm"), "DNS-1035"),
    ("one-role", _roles(1), "spec.roles in body should have at least 2 items"),
    ("eleven-roles", _roles(11), "spec.roles: Too many: 11: must have at most 10 items"),
    ("roles-required", _delete(("spec", "roles")), "spec.roles: Required value"),
    ("spec-required", _delete(("spec",)), "spec: Required value"),
    ("duplicate-role", _set(("spec", "roles", 1, "name"), "prefill"), 'spec.roles[1]: Duplicate value: {"name":"prefill"}'),
    ("role-name-upper", _set(("spec", "roles", 0, "name"), "Prefill"), "spec.roles[0].name"),
    ("role-name-underscore", _set(("spec", "roles", 0, "name"), "pre_fill"), "spec.roles[0].name"),
    ("role-name-dash", _set(("spec", "roles", 0, "name"), "prefill-"), "spec.roles[0].name"),
    ("role-name-long", _set(("spec", "roles", 0, "name"), "x" * 64), "spec.roles[0].name"),
    ("role-name-required", _delete(("spec", "roles", 0, "name")), "name: Required value"),
    ("slices-0", _set(("spec", "slices"), 0), "spec.slices"),
    ("slices-101", _set(("spec", "slices"), 101), "spec.slices"),
    ("slices-negative", _set(("spec", "slices"), -1), "spec.slices"),
    ("slices-string", _set(("spec", "slices"), "two"), "spec.slices in body must be of type integer"),
    ("worker-template", _all(_delete(TEMPLATE), _set((*TEMPLATE[:-1], "size"), 2)), "workerTemplate: Required value"),
    ("lws-template", _delete(TEMPLATE[:-1]), "leaderWorkerTemplate: Required value"),
    ("all-or-nothing", _set(("spec", "roles", 0, "spec", "replicas"), 0), "replicas must be zero for all"),
    ("all-or-nothing-unset", _all(_set(("spec", "roles", 0, "spec", "replicas"), 0),
                                  _delete(("spec", "roles", 1, "spec", "replicas"))), "replicas must be zero for all"),
    ("negative-replicas", _set(("spec", "roles", 0, "spec", "replicas"), -1), "spec.roles[0].spec.replicas"),
    ("rollout-type", _set(("spec", "roles", 0, "spec", "rolloutStrategy"), {"type": "Recreate"}), "Unsupported value"),
    ("rollout-type-empty", _set(("spec", "roles", 0, "spec", "rolloutStrategy"), {"type": ""}), "Unsupported value"),
    ("partition", _rolling(0, partition=1), "partition must not be set"),
    ("surge-negative", _rolling(0, maxSurge=-1), "non-negative integer or a percentage"),
    ("surge-150", _rolling(0, maxSurge="150%"), "non-negative integer or a percentage"),
    ("surge-word", _rolling(0, maxSurge="ten"), "non-negative integer or a percentage"),
    ("surge-fraction", _rolling(0, maxSurge="5.5%"), "non-negative integer or a percentage"),
    ("surge-unavailable-0", _rolling(0, maxSurge=0, maxUnavailable=0), "must not both be 0"),
    ("surge-unavailable-0-scaled", _rolling(0, maxSurge="0%", maxUnavailable="10%"), "must not both be 0"),
    ("names-too-long", _all(_set(("metadata", "name"), "n" * 30), _set(("spec", "slices"), 10),
                            _set(("spec", "roles", 0, "name"), "p" * 17), _set(("spec", "roles", 1, "name"), "d" * 18)),
     "exceed 63 characters"),
    ("placement-topology", _set(("spec", "placementPolicy"), {"type": "ExclusiveSlice"}), "topology (a node label key)"),
    ("placement-type", _set(("spec", "placementPolicy"), {"type": "Spread", "topology": "zone"}), "Unsupported value"),
    ("exclusive-annotation-role", _annotated("role"), "cannot be combined with the LWS annotations"),
    ("exclusive-annotation-worker", _annotated("worker"), "cannot be combined with the LWS annotations"),
    ("exclusive-annotation-leader", _annotated("leader"), "cannot be combined with the LWS annotations"),
    ("external-slices", _all(_set(("spec", "slices"), 2), _set(("spec", "roles", 0, "scaling"), {"mode": "External"})),
     "External scaling cannot be combined with slices > 1"),
    ("unknown-spec", _set(("spec", "replcas"), 3), 'unknown field "spec.replcas"'),
    ("unknown-role-spec", _set(("spec", "roles", 0, "spec", "replcas"), 3), 'unknown field "spec.roles[0].spec.replcas"'),
    ("unknown-lws-template", _set((*TEMPLATE[:-1], "workerTemplat"), 3),
     'unknown field "spec.roles[0].spec.leaderWorkerTemplate.workerTemplat"'),
    ("unknown-container", _set((*CONTAINER, "imagee"), 3), 'unknown field "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].imagee"'),
    ("unknown-role", _set(("spec", "roles", 1, "sepc"), 3), 'unknown field "spec.roles[1].sepc"'),
    ("unknown-metadata", _set(("metadata", "lables"), 3), 'unknown field "metadata.lables"'),
    ("port-type", _set((*CONTAINER, "ports"), [{"containerPort": "80"}]), "containerPort in body must be of type integer"),
    ("label-type", _set(("spec", "roles", 0, "metadata"), {"labels": {"version": 2}}), "labels.version in body must be of type string"),
    ("unnamed-container", _delete((*CONTAINER, "name")), "containers[0].name: Required value"),
]


@pytest.mark.parametrize("case", BAD_INPUTS, ids=lambda case: case[0])
def test_the_project_crd_refuses_bad_inputs(planes, case):
    cp = planes("project")
    _, mutate, expected = case
    doc = base()
    mutate(doc)
    result = cp.kubectl("create", "--dry-run=server", "--validate=strict", "-f", "-", input=to_yaml(doc), check=False)
    assert result.returncode != 0, result.stdout
    assert expected in result.stderr, result.stderr


def test_the_base_document_is_accepted(crd_plane):
    cp = crd_plane
    result = cp.kubectl("create", "--dry-run=server", "--validate=strict", "-f", "-", input=to_yaml(base()), check=False)
    assert result.returncode == 0, result.stderr


def test_the_crds_command_output_installs(planes):
    # What `kubectl disagg crds | kubectl apply --server-side -f -` sends, as the API server judges
    # it (CEL cost, structural schema), on a control plane that already has these names.
    printed = subprocess.run([sys.executable, "-m", "kubectl_disagg", "crds"], capture_output=True, text=True,
                             check=True).stdout
    cp = planes("project")
    result = cp.kubectl("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-", input=printed,
                        check=False)
    assert result.returncode == 0, result.stderr
    # two DisaggregatedSet kinds, RolloutPolicy, RolloutState
    assert result.stdout.count("serverside-applied (server dry run)") == 4


def _description(kind_file: str, *path: str) -> str:
    """A field's description in config/crd, whitespace folded (kubectl explain wraps it anew)."""
    node = yaml.safe_load((PROJECT_CRDS[0] / kind_file).read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for key in path:
        node = node["properties"][key]
    return " ".join(node["description"].split())


@pytest.mark.parametrize("field, kind_file, path", [
    ("rolloutpolicy.spec.waves", "rolloutpolicies.yaml", ("spec", "waves")),
    ("disaggregatedset.spec.roles", "disaggregatedsets.yaml", ("spec", "roles")),
    ("rolloutstate", "rolloutstates.yaml", ()),
])
def test_kubectl_explain_describes_the_fields_once_the_crds_are_installed(planes, field, kind_file, path):
    """The README's `kubectl disagg crds | kubectl apply --server-side -f -`, then `kubectl
    explain` with the control plane's own kubectl: the CRDs keep their descriptions (issue 41)."""
    printed = subprocess.run([sys.executable, "-m", "kubectl_disagg", "crds"], capture_output=True, text=True,
                             check=True).stdout
    cp = planes("project")
    cp.kubectl("apply", "--server-side", "-f", "-", input=printed)
    explained = " ".join(cp.kubectl("explain", field).stdout.split())
    assert _description(kind_file, *path) in explained


# The API server's words for the cases where the project's CRD and our offline schema once
# parted ways; None: accepted.
SCHEMA_SERVER_SAYS = {
    "network-config-empty": "spec.roles[0].spec.networkConfig.subdomainPolicy: Required value",
    "sub-group-size-0": "subGroupSize in body should be greater than or equal to 1",
    "max-surge-leading-zero": "must be a non-negative integer or a percentage from 0% to 100%",
    "max-surge-null": None,
}


@pytest.mark.parametrize("case", SCHEMA_VERDICTS, ids=lambda case: case[0])
def test_offline_and_the_project_crd_give_the_same_verdict(planes, case):
    name, doc, ours = case
    result = planes("project").kubectl("create", "--dry-run=server", "--validate=strict", "-f", "-",
                                       input=to_yaml(doc), check=False)
    says = SCHEMA_SERVER_SAYS[name]
    assert (result.returncode != 0) == (says is not None) == bool(errors_of(doc)), result.stderr
    if says:
        assert says in result.stderr, result.stderr
        assert errors_of(doc) == [ours]


def test_a_null_surge_is_accepted_by_both_crds(crd_plane):
    (doc,) = [case[1] for case in SCHEMA_VERDICTS if case[0] == "max-surge-null"]
    result = crd_plane.kubectl("create", "--dry-run=server", "--validate=strict", "-f", "-", input=to_yaml(doc),
                               check=False)
    assert result.returncode == 0 and errors_of(doc) == [], result.stderr
