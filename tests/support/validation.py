"""Validation builders and the tables of refusals the unit and integration tiers share."""

from __future__ import annotations

import copy

from kubectl_disagg.core.delivery.sets import load_documents
from kubectl_disagg.errors import UserError
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.manifests.writer import to_yaml


WORKER = {"spec": {"containers": [{"name": "c", "image": "img:1"}]}}


def base() -> dict:
    return {
        "apiVersion": "disaggregatedset.x-k8s.io/v1",
        "kind": "DisaggregatedSet",
        "metadata": {"name": "my-llm"},
        "spec": {
            "roles": [
                {"name": "prefill", "spec": {"replicas": 2, "leaderWorkerTemplate": {"workerTemplate": copy.deepcopy(WORKER)}}},
                {"name": "decode", "spec": {"replicas": 1, "leaderWorkerTemplate": {"workerTemplate": copy.deepcopy(WORKER)}}},
            ]
        },
    }


def errors_of(doc: dict | str) -> list[str]:
    text = doc if isinstance(doc, str) else to_yaml(doc)
    try:
        load_documents(parse_stream(text, "ds.yaml"))
    except UserError as err:
        return err.lines()
    return []


def only_error(doc: dict) -> str:
    errors = errors_of(doc)
    assert len(errors) == 1, errors
    return errors[0]


def role_spec(doc: dict, index: int) -> dict:
    return doc["spec"]["roles"][index]["spec"]


def _worker_container(doc: dict) -> dict:
    return role_spec(doc, 0)["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]


def _mutated(mutate) -> dict:
    doc = base()
    mutate(doc)
    return doc


CONTAINER_PATH = "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.containers[0]"


# Inputs a cluster refuses that kubectl-disagg once accepted: (id, document, the one error we
# give, who refuses it in the cluster). tests/integration/test_api_verdicts.py sends each to the
# API server: "set" = the DisaggregatedSet itself (its CRD), "pod" = the Pod the LWS controller
# would create from the template (pod validation), "namespace" = the namespace.
REFUSED_BY_THE_CLUSTER = [
    ("duplicate-env", _mutated(lambda d: _worker_container(d).update(
        env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}])),
     f'ds.yaml:16: {CONTAINER_PATH}.env[1]: Duplicate value: {{"name":"A"}}', "set"),
    ("duplicate-container-port", _mutated(lambda d: _worker_container(d).update(
        ports=[{"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}])),
     f'ds.yaml:17: {CONTAINER_PATH}.ports[1]: Duplicate value: {{"containerPort":80,"protocol":"TCP"}}', "set"),
    ("size-over-int32", _mutated(lambda d: role_spec(d, 0)["leaderWorkerTemplate"].update(size=100000000000)),
     "ds.yaml:10: spec.roles[0].spec.leaderWorkerTemplate.size: Invalid value: 100000000000: "
     "must be a 32-bit integer (from -2147483648 to 2147483647)", "set"),
    ("probe-port-over-65535", _mutated(lambda d: _worker_container(d).update(
        readinessProbe={"httpGet": {"port": 70000}})),
     f"ds.yaml:17: {CONTAINER_PATH}.readinessProbe.httpGet.port: Invalid value: 70000: "
     "must be between 1 and 65535, inclusive", "pod"),
    ("grpc-probe-port-over-65535", _mutated(lambda d: _worker_container(d).update(
        livenessProbe={"grpc": {"port": 65536}})),
     f"ds.yaml:16: {CONTAINER_PATH}.livenessProbe.grpc.port: Invalid value: 65536: "
     "must be between 1 and 65535, inclusive", "pod"),
    ("rollout-type-empty", _mutated(lambda d: role_spec(d, 0).update(rolloutStrategy={"type": ""})),
     'ds.yaml:17: spec.roles[0].spec.rolloutStrategy.type: Unsupported value: "": supported values: "RollingUpdate"',
     "set"),
    ("namespace-64-characters", _mutated(lambda d: d["metadata"].update(namespace="n" * 64)),
     f'ds.yaml:5: metadata.namespace: Invalid value: "{"n" * 64}": must be no more than 63 characters '
     "(an RFC 1123 label)", "namespace"),
]


def with_env_value(size: int) -> dict:
    doc = base()
    _worker_container(doc)["env"] = [{"name": "BIG", "value": "x" * size}]
    return doc


# Where the project's CRD and we parted ways (tests/integration/test_crds.py sends each to the
# API server): (id, document, the one error we give, or None where the server accepts it).
SCHEMA_VERDICTS = [
    ("network-config-empty", _mutated(lambda d: role_spec(d, 0).update(networkConfig={})),
     "ds.yaml:15: spec.roles[0].spec.networkConfig.subdomainPolicy: Required value"),
    ("sub-group-size-0", _mutated(lambda d: role_spec(d, 0)["leaderWorkerTemplate"].update(
        size=2, subGroupPolicy={"subGroupSize": 0})),
     "ds.yaml:12: spec.roles[0].spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize: Invalid value: 0: "
     "should be greater than or equal to 1"),
    ("max-surge-leading-zero", _mutated(lambda d: role_spec(d, 0).update(
        rolloutStrategy={"rollingUpdateConfiguration": {"maxSurge": "05%"}})),
     "ds.yaml:18: spec.roles[0].spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge: Invalid value: '05%': "
     "must be a percentage without leading zeros, e.g. \"5%\", got '05%'"),
    ("max-surge-null", _mutated(lambda d: role_spec(d, 0).update(
        rolloutStrategy={"rollingUpdateConfiguration": {"maxSurge": None, "maxUnavailable": None}})), None),
]


def _container_update(**fields):
    return lambda d: _worker_container(d).update(fields)


def _template_update(**fields):
    return lambda d: role_spec(d, 0)["leaderWorkerTemplate"].update(fields)


def _pod_spec_update(**fields):
    return lambda d: role_spec(d, 0)["leaderWorkerTemplate"]["workerTemplate"]["spec"].update(fields)


def _placement(topology):
    return lambda d: d["spec"].update(placementPolicy={"type": "ExclusiveSlice", "topology": topology})


GPU = "nvidia.com/gpu"


# Templates the LWS CRD accepts and no StatefulSet can be made of (the API server's pod and
# StatefulSet validation refuses them when the LWS controller creates one): (id, mutation of
# base(), the path our one error names). tests/integration/test_validate_server.py sends the
# StatefulSets of each to the API server and finds the same refusal at the same path.
POD_TEMPLATE_REFUSALS = [
    ("topology-not-a-label-key", _placement("rack zone"), "spec.placementPolicy.topology"),
    ("gpu-fraction", _container_update(resources={"limits": {GPU: "1.5"}}), f"{CONTAINER_PATH}.resources.limits.{GPU}"),
    ("gpu-milli", _container_update(resources={"limits": {GPU: "1m"}}), f"{CONTAINER_PATH}.resources.limits.{GPU}"),
    ("extended-requests-only", _container_update(resources={"requests": {GPU: "1"}}),
     f"{CONTAINER_PATH}.resources.limits"),
    ("no-image", lambda d: _worker_container(d).pop("image"), f"{CONTAINER_PATH}.image"),
    ("restart-never", _pod_spec_update(restartPolicy="Never"),
     "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.restartPolicy"),
    ("resource-without-domain", _container_update(resources={"limits": {"gpu": "1"}}),
     f"{CONTAINER_PATH}.resources.limits.gpu"),
    ("env-name-with-equals", _container_update(env=[{"name": "A=B", "value": "1"}]), f"{CONTAINER_PATH}.env[0].name"),
    ("empty-liveness-probe", _container_update(livenessProbe={}), f"{CONTAINER_PATH}.livenessProbe"),
    ("empty-leader-template", _template_update(size=2, leaderTemplate={}),
     "spec.roles[0].spec.leaderWorkerTemplate.leaderTemplate.spec.containers"),
]


# More of pod validation, each found by sending templates to the API server as StatefulSets
# (tests/integration/test_validate_server.py holds them in its fleet): (id, mutation, our path).
MORE_POD_TEMPLATE_REFUSALS = [
    ("hugepages-alone", _container_update(resources={"limits": {"hugepages-2Mi": "2Mi"}}),
     f"{CONTAINER_PATH}.resources"),
    ("exec-without-command", _container_update(livenessProbe={"exec": {}}), f"{CONTAINER_PATH}.livenessProbe.exec.command"),
    ("probe-period-negative", _container_update(livenessProbe={"tcpSocket": {"port": 80}, "periodSeconds": -1}),
     f"{CONTAINER_PATH}.livenessProbe.periodSeconds"),
    ("probe-grace-0", _container_update(livenessProbe={"tcpSocket": {"port": 80}, "terminationGracePeriodSeconds": 0}),
     f"{CONTAINER_PATH}.livenessProbe.terminationGracePeriodSeconds"),
    ("liveness-success-2", _container_update(livenessProbe={"tcpSocket": {"port": 80}, "successThreshold": 2}),
     f"{CONTAINER_PATH}.livenessProbe.successThreshold"),
    ("mount-without-volume", _container_update(volumeMounts=[{"name": "nope", "mountPath": "/x"}]),
     f"{CONTAINER_PATH}.volumeMounts[0].name"),
    ("dns-none-without-config", _pod_spec_update(dnsPolicy="None"),
     "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.dnsConfig"),
    ("service-account-name", _pod_spec_update(serviceAccountName="Bad_Name"),
     "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.serviceAccountName"),
    ("node-name", _pod_spec_update(nodeName="Bad_Name"), "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.nodeName"),
    ("priority-class-name", _pod_spec_update(priorityClassName="Bad_Name"),
     "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.priorityClassName"),
    ("run-as-user-negative", _container_update(securityContext={"runAsUser": -1}),
     f"{CONTAINER_PATH}.securityContext.runAsUser"),
    ("active-deadline", _pod_spec_update(activeDeadlineSeconds=60),
     "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.activeDeadlineSeconds"),
    ("toleration-exists-with-value", _pod_spec_update(tolerations=[{"key": "a", "operator": "Exists", "value": "x"}]),
     "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.tolerations[0].operator"),
    ("node-affinity-without-terms", _pod_spec_update(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}),
     "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.affinity.nodeAffinity."
     "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"),
    ("spread-skew-0", _pod_spec_update(topologySpreadConstraints=[
        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]),
     "spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec.topologySpreadConstraints[0].maxSkew"),
    ("env-value-and-value-from", _container_update(env=[{"name": "A", "value": "x", "valueFrom": {
        "fieldRef": {"fieldPath": "metadata.name"}}}]), f"{CONTAINER_PATH}.env[0].valueFrom"),
    ("claim-without-storage", _template_update(volumeClaimTemplates=[
        {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]),
     "spec.roles[0].spec.leaderWorkerTemplate.volumeClaimTemplates[0].spec.resources.requests.storage"),
]


# What the API server's message says, in its words, for each case of REFUSED_BY_THE_CLUSTER
# (tests/integration/test_api_verdicts.py holds the server to it).
SERVER_SAYS = {
    "duplicate-env": 'Duplicate value: {"name":"A"}',
    "duplicate-container-port": 'Duplicate value: {"containerPort":80,"protocol":"TCP"}',
    "size-over-int32": "must be of type integer with format int32",
    "probe-port-over-65535": "must be between 1 and 65535, inclusive",
    "grpc-probe-port-over-65535": "must be between 1 and 65535, inclusive",
    "rollout-type-empty": 'Unsupported value: "": supported values: "RollingUpdate"',
    "namespace-64-characters": "must be no more than 63 characters",
}
