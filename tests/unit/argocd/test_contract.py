"""The Argo CD plugin contract as pure functions: parameters, globs, namespaces, refusals."""

from __future__ import annotations

import json

import pytest
import yaml

from kubectl_disagg.argocd import contract as argocd
from kubectl_disagg.errors import UserError
from kubectl_disagg.inputs import tree as inputs
from kubectl_disagg.manifests.writer import to_yaml_stream
from tests.support.paths import EXAMPLES, REPO

EXAMPLE = (EXAMPLES / "prefill-decode.yaml").read_bytes()  # llama in namespace serving
UNNAMESPACED = EXAMPLE.replace(b"  namespace: serving\n", b"")
CONFIGMAP = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n"
LWS_APIS = "v1,apps/v1,leaderworkerset.x-k8s.io/v1,leaderworkerset.x-k8s.io/v1/LeaderWorkerSet"


def params(**environ) -> argocd.Parameters:
    return argocd.read_parameters(environ)


STEADY_ONLY = {"ARGOCD_ENV_REQUIRE_ROLLOUT_STATE": "false"}  # a directory deploying steady states alone


def generate(files: dict[str, bytes], environ: dict | None = None, state: bytes | None = None,
             steady_only: bool = True) -> argocd.GeneratedManifests:
    """`steady_only`: the Application turns the required rollout state off (most tests here
    are about other things); the tests of the rollout state pass False."""
    environ = {"KUBE_API_VERSIONS": LWS_APIS, **(STEADY_ONLY if steady_only else {}), **(environ or {})}
    parameters = argocd.read_parameters(environ)
    listed = {**files, **({parameters.state_file: state} if state is not None else {})}
    return argocd.generate(inputs.walked("", listed, parameters.reading), parameters, environ)


def refusal(files: dict[str, bytes], environ: dict | None = None, state: bytes | None = None,
            steady_only: bool = True) -> str:
    with pytest.raises(UserError) as err:
        generate(files, environ, state, steady_only)
    return "\n".join(err.value.lines())


# --- parameters ------------------------------------------------------------------------------

def test_defaults_are_the_ones_plugin_yaml_announces():
    announced = {p["name"]: p.get("array", p.get("string"))
                 for p in yaml.safe_load((REPO / "plugin.yaml").read_text())["spec"]["parameters"]["static"]}
    defaults = params()
    assert set(announced) == set(argocd.PARAMETERS)
    assert announced == {"namespace": "", "include": list(defaults.include), "strict": "false",
                         "rollout-state": defaults.state_file, "require-rollout-state": "true", "recurse": "false",
                         "exclude": list(defaults.exclude), "revision-services": "true"}
    assert (defaults.namespace, defaults.strict, defaults.unknown, defaults.require_state) == (None, False, (), True)


def test_app_parameters_win_over_param_variables_which_win_over_plugin_env():
    every = {
        "ARGOCD_APP_PARAMETERS": json.dumps([{"name": "namespace", "string": "from-json"}]),
        "PARAM_NAMESPACE": "from-param", "PARAM_STRICT": "true",
        "ARGOCD_ENV_NAMESPACE": "from-env", "ARGOCD_ENV_STRICT": "false",
        "ARGOCD_ENV_ROLLOUT_STATE": "state.yaml",
    }
    got = params(**every)
    assert (got.namespace, got.strict, got.state_file) == ("from-json", True, "state.yaml")
    del every["ARGOCD_APP_PARAMETERS"]
    assert params(**every).namespace == "from-param"
    del every["PARAM_NAMESPACE"]
    assert params(**every).namespace == "from-env"


@pytest.mark.parametrize("environ", [
    {"ARGOCD_APP_PARAMETERS": json.dumps([{"name": "include", "array": ["a*.yaml", "b.json"]}])},
    {"PARAM_INCLUDE_1": "b.json", "PARAM_INCLUDE_0": "a*.yaml"},
    {"ARGOCD_ENV_INCLUDE": "./a*.yaml, b.json"},
])
def test_include_as_array_or_comma_separated(environ):
    assert params(**environ).include == ("a*.yaml", "b.json")


def test_values_are_data_not_code():
    hostile = "$(touch /tmp/x); `id` && echo 'a\"b'\nsecond line"
    got = params(ARGOCD_APP_PARAMETERS=json.dumps([{"name": "rollout-state", "string": hostile}]))
    assert got.state_file == hostile


def test_unknown_parameters_are_named_once():
    environ = {"ARGOCD_APP_PARAMETERS": json.dumps([{"name": "colour", "string": "red"}]), "PARAM_COLOUR": "red"}
    assert params(**environ).unknown == ("ARGOCD_APP_PARAMETERS: colour",)
    assert params(PARAM_COLOUR="red").unknown == ("PARAM_COLOUR",)
    assert params(ARGOCD_ENV_OTHER_TOOL="x").unknown == ()  # plugin.env carries other things too
    assert params(**{"PARAM_INCLUDE_²": "x"}).unknown == ("PARAM_INCLUDE_²",)  # not an index: int() refuses it


@pytest.mark.parametrize("environ, message", [
    ({"ARGOCD_APP_PARAMETERS": "[{"}, "ARGOCD_APP_PARAMETERS: not JSON"),
    ({"ARGOCD_APP_PARAMETERS": "{}"}, "expected a JSON list"),
    ({"ARGOCD_APP_PARAMETERS": "[" * 50_000 + "]" * 50_000}, "ARGOCD_APP_PARAMETERS: nested too deeply"),
    ({"PARAM_STRICT": "yes"}, 'parameter strict: Invalid value: "yes"'),
    ({"PARAM_NAMESPACE": "Prod"}, 'parameter namespace: Invalid value: "Prod"'),
    ({"PARAM_NAMESPACE": "prod\n"}, 'parameter namespace: Invalid value: "prod\\n"'),
    ({"PARAM_NAMESPACE": "a" * 64}, "must be a lowercase RFC 1123 label"),
    ({"ARGOCD_APP_PARAMETERS": json.dumps([{"name": "include", "array": ["*.yaml", 1]}])}, "parameter include: needs"),
    ({"PARAM_ROLLOUT_STATE": "../state.yaml"}, "must be a path inside the application directory"),
    ({"ARGOCD_APP_PARAMETERS": json.dumps([{"name": "namespace", "map": {"a": "b"}}])}, "parameter namespace: must be a string"),
])
def test_bad_parameters(environ, message):
    with pytest.raises(UserError) as err:
        params(**environ)
    assert message in str(err.value)


# --- files ---------------------------------------------------------------------------------

def test_include_and_exclude_choose_as_argo_cd_does():
    listing = ["a.yaml", "b.yml", "c.json", "d.txt", "sub/e.yaml", "sub/deeper/f.yaml", "disagg-rollout-state.yaml"]
    chosen = lambda **environ: inputs.choose(listing, params(**environ).reading)[0]  # noqa: E731
    assert chosen() == ["a.yaml", "b.yml", "c.json"]
    assert chosen(PARAM_RECURSE="true") == ["a.yaml", "b.yml", "c.json", "sub/deeper/f.yaml", "sub/e.yaml"]
    assert chosen(PARAM_RECURSE="true", PARAM_INCLUDE="sub/*.yaml") == ["sub/deeper/f.yaml", "sub/e.yaml"]
    assert chosen(PARAM_RECURSE="true", PARAM_INCLUDE="sub/?.yaml") == ["sub/e.yaml"]
    assert chosen(PARAM_RECURSE="true", PARAM_EXCLUDE="sub/deeper/*") == ["a.yaml", "b.yml", "c.json", "sub/e.yaml"]
    assert chosen(PARAM_INCLUDE="{a,c}.*") == ["a.yaml", "c.json"]


def test_an_include_below_the_top_needs_recurse():
    with pytest.raises(UserError, match="read only with the recurse parameter true"):
        params(PARAM_INCLUDE="**/*.yaml")


def test_discovery_sees_sets_even_broken_ones():
    assert argocd.holds_set(EXAMPLE)
    assert not argocd.holds_set(CONFIGMAP)
    assert argocd.holds_set(b"kind: DisaggregatedSet\nspec: [\n")
    assert not argocd.holds_set(b"kind: [\n")


# --- namespaces ------------------------------------------------------------------------------

@pytest.mark.parametrize("own, parameter, destination, expected", [
    (None, None, None, None),
    (None, None, "dest", "dest"),
    (None, "param", "dest", "param"),
    ("own", None, "dest", "own"),
    ("own", "own", "dest", "own"),
])
def test_namespace_for(own, parameter, destination, expected):
    assert argocd.namespace_for(own, parameter, destination) == expected


def test_namespace_parameter_may_not_contradict_the_document():
    with pytest.raises(ValueError, match='namespace "own" contradicts the namespace parameter "param"'):
        argocd.namespace_for("own", "param", "dest")


# --- generate --------------------------------------------------------------------------------

def test_renders_sets_and_passes_other_documents_through_in_file_order():
    result = generate({"a.yaml": CONFIGMAP, "b.yaml": UNNAMESPACED},
                      {"ARGOCD_APP_NAMESPACE": "dest", "KUBE_API_VERSIONS": LWS_APIS})
    assert [(o["kind"], o["metadata"]["namespace"]) for o in result.objects] == [
        ("ConfigMap", "dest"), ("LeaderWorkerSet", "dest"), ("Service", "dest"),
        ("LeaderWorkerSet", "dest"), ("Service", "dest")]
    assert result.warnings == []


def test_namespace_parameter_fills_in_and_cluster_scoped_kinds_get_none():
    namespace_doc = b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: serving\n"
    result = generate({"a.yaml": namespace_doc, "b.yaml": UNNAMESPACED, "c.yaml": CONFIGMAP},
                      {"PARAM_NAMESPACE": "param", "ARGOCD_APP_NAMESPACE": "dest"})
    assert "namespace" not in result.objects[0]["metadata"]
    assert {o["metadata"]["namespace"] for o in result.objects[1:]} == {"param"}


def test_a_document_contradicting_the_namespace_parameter_is_refused_with_its_line():
    other = CONFIGMAP.replace(b"  name: settings\n", b"  name: settings\n  namespace: elsewhere\n")
    message = refusal({"a.yaml": EXAMPLE, "b.yaml": other}, {"PARAM_NAMESPACE": "serving"})
    assert message == ('b.yaml:5: metadata.namespace: namespace "elsewhere" contradicts '
                       'the namespace parameter "serving"')


def test_revision_is_an_annotation_on_rendered_objects_only():
    plain = generate({"a.yaml": EXAMPLE, "b.yaml": CONFIGMAP}).objects
    stamped = generate({"a.yaml": EXAMPLE, "b.yaml": CONFIGMAP}, {"ARGOCD_APP_REVISION": "0123abcd"}).objects
    for before, after in zip(plain, stamped):
        annotations = after["metadata"].pop("annotations", {})
        if after["kind"] == "ConfigMap":
            assert annotations == {}
        else:
            assert annotations == {argocd.REVISION_ANNOTATION: "0123abcd"}
        before["metadata"].pop("annotations", None)
        assert before == after  # names, labels and specs do not depend on the commit


def test_output_depends_on_the_inputs_only():
    files = {"a.yaml": EXAMPLE, "b.yaml": CONFIGMAP}
    environ = {"ARGOCD_APP_REVISION": "r", "ARGOCD_APP_NAMESPACE": "serving"}
    assert to_yaml_stream(generate(files, environ).objects) == to_yaml_stream(generate(dict(files), dict(environ)).objects)


def test_refuses_an_empty_result():
    assert "no objects to render" in refusal({})
    assert "no objects to render" in refusal({"a.yaml": b"---\n"})


def test_refuses_any_invalid_document_with_every_problem():
    broken = EXAMPLE.replace(b"replicas: 2", b"replicas: -2")
    message = refusal({"a.yaml": broken, "b.yaml": b"kind: ConfigMap\n", "c.yaml": CONFIGMAP})
    assert "a.yaml:12: spec.roles[0].spec.replicas" in message
    assert "b.yaml:1: apiVersion: Required value" in message


@pytest.mark.parametrize("environ", [{}, {"ARGOCD_APP_PARAMETERS": "null"}, {"ARGOCD_APP_PARAMETERS": ""},
                                     {"ARGOCD_APP_PARAMETERS": "[]"}])
def test_no_parameters_is_every_default(environ):
    """Argo CD sends `null` for an Application whose plugin block sets no parameters."""
    assert params(**environ) == params()


def test_empty_cluster_information_renders_with_one_warning():
    """Argo CD's source hydrator sends KUBE_VERSION and KUBE_API_VERSIONS empty."""
    got = generate({"a.yaml": EXAMPLE}, {"KUBE_VERSION": "", "KUBE_API_VERSIONS": ""})
    assert [o["kind"] for o in got.objects] == ["LeaderWorkerSet", "Service"] * 2
    assert got.warnings == [argocd.NO_API_VERSIONS_WARNING]
    assert generate({"a.yaml": CONFIGMAP}, {"KUBE_API_VERSIONS": ""}).warnings == []  # no LWS rendered
    assert generate({"a.yaml": EXAMPLE}).warnings == []


def test_refuses_a_cluster_without_leaderworkerset():
    message = refusal({"a.yaml": EXAMPLE}, {"KUBE_API_VERSIONS": "v1,apps/v1,apps/v1/Deployment"})
    assert message.startswith("the destination cluster does not serve leaderworkerset.x-k8s.io/v1/LeaderWorkerSet")
    assert generate({"a.yaml": EXAMPLE}, {"KUBE_API_VERSIONS": LWS_APIS}).objects
    assert generate({"a.yaml": CONFIGMAP}, {"KUBE_API_VERSIONS": "v1"}).objects  # nothing of LWS to apply


def test_renders_from_the_rollout_state_and_requires_one_by_default():
    from kubectl_disagg.gitops.step import initial_state
    from kubectl_disagg.core.delivery.sets import load_sets
    from kubectl_disagg.manifests.reader import parse_stream
    from kubectl_disagg.manifests.writer import to_yaml
    from kubectl_disagg.gitops.state import state_document

    (ds,) = load_sets(parse_stream(EXAMPLE, "a.yaml"))
    document = state_document(initial_state(ds, ds.namespace))
    state = to_yaml(document).encode()
    steady = generate({"a.yaml": EXAMPLE}).objects
    assert generate({"a.yaml": EXAMPLE}, state=state, steady_only=False).objects == steady
    assert generate({"a.yaml": EXAMPLE}, {"PARAM_STRICT": "true"}, state=state).objects == steady
    # Design §8 rule 3: without a state the set is refused, naming the commands that create it.
    (line,) = refusal({"a.yaml": EXAMPLE}, steady_only=False).splitlines()
    assert line.startswith("a.yaml: disaggregatedset/llama: no rollout state") and "rollout state init" in line
    assert "no rollout state" in refusal({"a.yaml": EXAMPLE}, {"PARAM_STRICT": "true"})
    assert generate({"a.yaml": EXAMPLE}, {"PARAM_REQUIRE_ROLLOUT_STATE": "false"}, steady_only=False).objects == steady
    bad = state.replace(b"formatVersion: 2", b"formatVersion: 9")
    assert refusal({"a.yaml": EXAMPLE}, state=bad).startswith("disagg-rollout-state.yaml:")


def test_a_directory_is_checked_whole():
    from kubectl_disagg.gitops.step import initial_state
    from kubectl_disagg.core.delivery.sets import load_sets
    from kubectl_disagg.manifests.reader import parse_stream
    from kubectl_disagg.manifests.writer import to_yaml, to_yaml_stream
    from kubectl_disagg.gitops.state import state_document

    (ds,) = load_sets(parse_stream(EXAMPLE, "a.yaml"))
    document = state_document(initial_state(ds, ds.namespace))
    other = {**document, "metadata": {"name": "mistral", "namespace": "serving"}}
    line = refusal({"a.yaml": EXAMPLE}, state=to_yaml_stream([document, other]).encode(), steady_only=False)
    assert line.startswith("disagg-rollout-state.yaml:") and "metadata.name" in line
    assert "disaggregatedset/mistral" in line and "every state matches a set" in line
    elsewhere = {**document, "metadata": {"name": "llama", "namespace": "batch"}}
    line = refusal({"a.yaml": EXAMPLE}, state=to_yaml(elsewhere).encode(), steady_only=False)
    assert "metadata.namespace" in line
    twice = refusal({"a.yaml": EXAMPLE}, state=to_yaml_stream([document, document]).encode(), steady_only=False)
    assert "a second rollout state for disaggregatedset/llama" in twice


def test_strict_refuses_anything_doubtful():
    strict = {"PARAM_STRICT": "true"}
    assert refusal({"a.yaml": CONFIGMAP}, strict) == "strict: no DisaggregatedSet in the application directory"
    assert refusal({"a.yaml": EXAMPLE, "b.yaml": b"# nothing\n"}, strict) == "b.yaml: strict: file holds no document"
    assert refusal({"a.yaml": EXAMPLE}, {**strict, "PARAM_COLOUR": "red"}) == "strict: unknown parameter PARAM_COLOUR"
    lenient = generate({"a.yaml": EXAMPLE}, {"PARAM_COLOUR": "red"})
    assert lenient.warnings == ["unknown parameter PARAM_COLOUR"]


def test_parameters_nested_without_end_are_one_line_from_cmp_generate(tmp_path, monkeypatch, capsys):
    """50,000 levels of JSON raised RecursionError out of `cmp generate` (a traceback)."""
    from kubectl_disagg.cli import main
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARGOCD_APP_PARAMETERS", "[" * 50_000 + "]" * 50_000)
    with pytest.raises(SystemExit) as exited:
        main(["cmp", "generate"])
    assert exited.value.code == 1
    assert capsys.readouterr().err.splitlines() == [
        "ARGOCD_APP_PARAMETERS: nested too deeply to be a list of {name, string|array|map}"]


def test_revision_services_false_renders_no_prv_services_and_keeps_the_users_own():
    user_service = (b"apiVersion: v1\nkind: Service\nmetadata:\n  name: mine-prv\n"
                    b"spec:\n  clusterIP: None\n")
    files = {"ds.yaml": EXAMPLE, "svc.yaml": user_service}
    every = generate(files).objects
    kept = generate(files, {"ARGOCD_ENV_REVISION_SERVICES": "false"}).objects
    ours = [o for o in every if o["kind"] == "Service" and o["metadata"]["name"] != "mine-prv"]
    assert ours and all(o["metadata"]["name"].endswith("-prv") for o in ours)
    assert kept == [o for o in every if o not in ours]
    assert params(ARGOCD_ENV_REVISION_SERVICES="FALSE").revision_services is False
    assert params().revision_services is True
