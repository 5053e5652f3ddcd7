"""Hypothesis strategies for DisaggregatedSets whose templates exercise the revision encoding:
quantities in many spellings, probes, env, volumes, PVC templates, subGroupPolicy, empty lists
and maps, `&&` and `<` in arguments, non-ASCII. Every document is valid for the upstream CRD.
"""

from __future__ import annotations

from hypothesis import strategies as st

DNS_LABEL = st.from_regex(r"\A[a-z][a-z0-9]{0,6}\Z")
TEXT = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=10),
    st.sampled_from(["serve --a && echo <ok> & wait", "x > y", "h\u00e9llo w\u00f6rld \u2014 \u2713",
                     "\u2028\u2029", "", "tab\there", 'quote"back\\slash', "\x7f\x00\x1f"]),
)
NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=8)

QUANTITY = st.one_of(
    st.sampled_from(["1000m", "1", "0.5", ".5", "1024Mi", "1Gi", "2G", "500m", "1.5Gi", "+1", "01", "1e3",
                     "1E3", "12e2", "0", "100u", "0.1Ki", "8Ei", "1000E", "1.", "3.0", "1536Mi", "2048Ki",
                     "1e-10", "0.5n", "12345678901234567890", "-1", "7Ei", "+5Mi", "007Ki", "0010",
                     "-3Gi", "+1.5", "1.50", "0.0", "1.Mi", "1023.5Ki"]),
    st.builds("{}{}{}".format, st.integers(0, 5000),
              st.sampled_from(["", ".5", ".25", ".000", ".0001"]),
              st.sampled_from(["", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "n", "u",
                               "e3", "e-3", "e0", "E6"])),
    st.integers(0, 10**6),
    # JSON numbers: 1e-4 … 1e15 is where Python and Go both write floats positionally
    st.floats(min_value=1e-4, max_value=1e15),
)
RESOURCE_NAMES = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "ephemeral-storage", "example.com/<dev>"])
RESOURCE_LIST = st.dictionaries(RESOURCE_NAMES, QUANTITY, max_size=3)
RESOURCES = st.fixed_dictionaries({}, optional={"limits": RESOURCE_LIST, "requests": RESOURCE_LIST})

INT_OR_STRING = st.one_of(st.integers(1, 65535), NAME)


def _probe() -> st.SearchStrategy:
    handler = st.one_of(
        st.fixed_dictionaries({"httpGet": st.fixed_dictionaries(
            {"port": INT_OR_STRING},
            optional={"path": TEXT, "scheme": st.sampled_from(["HTTP", "HTTPS"]),
                      "httpHeaders": st.lists(st.fixed_dictionaries({"name": NAME, "value": TEXT}), max_size=2)})}),
        st.fixed_dictionaries({"tcpSocket": st.fixed_dictionaries({"port": INT_OR_STRING})}),
        st.fixed_dictionaries({"exec": st.fixed_dictionaries({}, optional={"command": st.lists(TEXT, max_size=3)})}),
        st.fixed_dictionaries({"grpc": st.fixed_dictionaries({"port": st.integers(1, 65535)},
                                                             optional={"service": TEXT})}),
    )
    timing = st.fixed_dictionaries({}, optional={
        "initialDelaySeconds": st.integers(0, 600), "periodSeconds": st.integers(1, 60),
        "failureThreshold": st.integers(1, 10), "terminationGracePeriodSeconds": st.integers(0, 60)})
    return st.builds(lambda a, b: a | b, handler, timing)


PROBE = _probe()

KEY_REF = st.fixed_dictionaries({"key": TEXT}, optional={"name": NAME, "optional": st.booleans()})
ENV_VAR = st.one_of(
    st.fixed_dictionaries({"name": NAME}, optional={"value": TEXT}),
    st.fixed_dictionaries({"name": NAME, "valueFrom": st.one_of(
        st.fixed_dictionaries({"fieldRef": st.fixed_dictionaries({"fieldPath": TEXT},
                                                                 optional={"apiVersion": st.just("v1")})}),
        st.fixed_dictionaries({"configMapKeyRef": KEY_REF}),
        st.fixed_dictionaries({"secretKeyRef": KEY_REF}),
        st.fixed_dictionaries({"resourceFieldRef": st.fixed_dictionaries(
            {"resource": st.just("limits.cpu")}, optional={"divisor": QUANTITY})}),
    )}),
)
ENV_FROM = st.one_of(
    st.fixed_dictionaries({"configMapRef": st.fixed_dictionaries({}, optional={"name": NAME})},
                          optional={"prefix": TEXT}),
    st.fixed_dictionaries({"secretRef": st.fixed_dictionaries({}, optional={"name": NAME, "optional": st.booleans()})}),
)
PORT = st.fixed_dictionaries({"containerPort": st.integers(1, 65535)},
                             optional={"name": NAME, "protocol": st.sampled_from(["TCP", "UDP", "SCTP"]),
                                       "hostPort": st.integers(0, 65535)})
MOUNT = st.fixed_dictionaries({"name": NAME, "mountPath": TEXT}, optional={"readOnly": st.booleans(), "subPath": TEXT})


def _container() -> st.SearchStrategy:
    return st.fixed_dictionaries({"name": NAME}, optional={
        "image": TEXT,
        "command": st.lists(TEXT, max_size=3),
        "args": st.lists(TEXT, max_size=3),
        "workingDir": TEXT,
        "env": st.lists(ENV_VAR, max_size=3, unique_by=lambda e: e["name"]),
        "envFrom": st.lists(ENV_FROM, max_size=2),
        "ports": st.lists(PORT, max_size=3, unique_by=lambda p: p["containerPort"]),
        "resources": RESOURCES,
        "livenessProbe": PROBE,
        "readinessProbe": PROBE,
        "startupProbe": PROBE,
        "volumeMounts": st.lists(MOUNT, max_size=2, unique_by=lambda m: m["mountPath"]),
        "imagePullPolicy": st.sampled_from(["Always", "IfNotPresent", "Never"]),
        "securityContext": st.fixed_dictionaries({}, optional={"runAsUser": st.integers(0, 65535),
                                                               "privileged": st.booleans()}),
        "stdin": st.booleans(),
    })


CONTAINER = _container()

CLAIM_SPEC = st.fixed_dictionaries({}, optional={
    "accessModes": st.lists(st.sampled_from(["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany"]), max_size=2),
    "resources": st.fixed_dictionaries({}, optional={"requests": st.fixed_dictionaries({"storage": QUANTITY})}),
    "storageClassName": TEXT,
    "volumeMode": st.sampled_from(["Filesystem", "Block"]),
})
VOLUME_SOURCE = st.one_of(
    st.fixed_dictionaries({"emptyDir": st.fixed_dictionaries({}, optional={
        "medium": st.sampled_from(["", "Memory"]), "sizeLimit": QUANTITY})}),
    st.fixed_dictionaries({"configMap": st.fixed_dictionaries({}, optional={
        "name": NAME, "defaultMode": st.integers(0, 511),
        "items": st.lists(st.fixed_dictionaries({"key": TEXT, "path": TEXT}), max_size=2)})}),
    st.fixed_dictionaries({"secret": st.fixed_dictionaries({}, optional={"secretName": NAME, "optional": st.booleans()})}),
    st.fixed_dictionaries({"hostPath": st.fixed_dictionaries({"path": TEXT}, optional={"type": st.just("Directory")})}),
    st.fixed_dictionaries({"persistentVolumeClaim": st.fixed_dictionaries({"claimName": NAME},
                                                                          optional={"readOnly": st.booleans()})}),
    st.fixed_dictionaries({"rbd": st.fixed_dictionaries({"monitors": st.lists(TEXT, max_size=2), "image": TEXT},
                                                        optional={"pool": TEXT})}),
    st.fixed_dictionaries({"iscsi": st.fixed_dictionaries({"targetPortal": TEXT, "iqn": TEXT, "lun": st.integers(0, 9)})}),
    st.fixed_dictionaries({"azureDisk": st.fixed_dictionaries({"diskName": TEXT, "diskURI": TEXT})}),
    st.fixed_dictionaries({"projected": st.fixed_dictionaries({}, optional={"sources": st.lists(st.one_of(
        st.fixed_dictionaries({"configMap": st.fixed_dictionaries({}, optional={"name": NAME})}),
        st.fixed_dictionaries({"secret": st.fixed_dictionaries({}, optional={"name": NAME})}),
    ), max_size=2)})}),
    st.fixed_dictionaries({"ephemeral": st.fixed_dictionaries({"volumeClaimTemplate": st.fixed_dictionaries(
        {"spec": CLAIM_SPEC}, optional={"metadata": st.fixed_dictionaries({}, optional={
            "labels": st.dictionaries(NAME, TEXT, max_size=2)})})})}),
)
VOLUME = st.builds(lambda name, source: {"name": name} | source, NAME, VOLUME_SOURCE)

TOLERATION = st.fixed_dictionaries({}, optional={
    "key": NAME, "operator": st.sampled_from(["Exists", "Equal"]), "value": TEXT,
    "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
    "tolerationSeconds": st.integers(0, 3600)})


def _metadata(prunable: bool) -> st.SearchStrategy:
    optional = {"labels": st.dictionaries(NAME, TEXT, max_size=3),
                "annotations": st.dictionaries(TEXT, TEXT, max_size=2)}
    if prunable:  # fields the CRD's embedded ObjectMeta does not keep
        optional |= {"generateName": NAME, "uid": NAME}
    return st.fixed_dictionaries({}, optional=optional)


def pod_template(prunable: bool = False) -> st.SearchStrategy:
    spec = st.fixed_dictionaries(
        {"containers": st.lists(CONTAINER, max_size=2, unique_by=lambda c: c["name"])},
        optional={
            "initContainers": st.lists(CONTAINER, max_size=1),
            "volumes": st.lists(VOLUME, max_size=3, unique_by=lambda v: v["name"]),
            "nodeSelector": st.dictionaries(NAME, TEXT, max_size=3),
            "tolerations": st.lists(TOLERATION, max_size=2),
            # a list map keyed by name, which defaults to "": at most one without a name
            "imagePullSecrets": st.lists(st.fixed_dictionaries({}, optional={"name": NAME}), max_size=2,
                                         unique_by=lambda secret: secret.get("name", "")),
            "serviceAccountName": NAME,
            "terminationGracePeriodSeconds": st.integers(0, 600),
            "hostNetwork": st.booleans(),
            "schedulerName": TEXT,
            "priority": st.integers(-10, 10),
        })
    return st.fixed_dictionaries({}, optional={"metadata": _metadata(prunable), "spec": spec})


def claim_template(prunable: bool = False) -> st.SearchStrategy:
    return st.fixed_dictionaries(
        {"metadata": st.fixed_dictionaries({"name": NAME}, optional={"labels": st.dictionaries(NAME, TEXT, max_size=2)})},
        optional={"spec": CLAIM_SPEC, "apiVersion": st.just("v1"), "kind": st.just("PersistentVolumeClaim")})


def leader_worker_template(prunable: bool = False) -> st.SearchStrategy:
    return st.fixed_dictionaries({"workerTemplate": pod_template(prunable)}, optional={
        "leaderTemplate": pod_template(prunable),
        "size": st.integers(1, 8),
        "restartPolicy": st.sampled_from(["RecreateGroupOnPodRestart", "None", "RecreateGroupAfterStart"]),
        "subGroupPolicy": st.fixed_dictionaries({}, optional={
            "subGroupPolicyType": st.sampled_from(["LeaderWorker", "LeaderExcluded"]),
            "subGroupSize": st.integers(1, 4)}),
        "volumeClaimTemplates": st.lists(claim_template(prunable), max_size=2),
        "persistentVolumeClaimRetentionPolicy": st.fixed_dictionaries({}, optional={
            "whenDeleted": st.sampled_from(["Retain", "Delete"]),
            "whenScaled": st.sampled_from(["Retain", "Delete"])}),
    })


def disaggregated_set(prunable: bool = False) -> st.SearchStrategy:
    role = st.builds(lambda name, template: {"name": name, "spec": {"replicas": 1, "leaderWorkerTemplate": template}},
                     DNS_LABEL, leader_worker_template(prunable))
    roles = st.lists(role, min_size=2, max_size=3, unique_by=lambda r: r["name"])
    return st.builds(lambda roles: {"apiVersion": "disaggregatedset.x-k8s.io/v1", "kind": "DisaggregatedSet",
                                    "metadata": {"name": "gen"}, "spec": {"roles": roles}}, roles)
