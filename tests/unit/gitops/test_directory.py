"""One directory pipeline (gitops/directory.py): what every `-f DIR` command and `cmp generate`
read from a directory, and that they agree.

The differential test generates directory trees (nested folders, several sets, states beside
some, include/exclude globs, Argo CD's dot-files, symbolic links, empty files) and runs every
command that takes `-f DIR`, and `cmp generate` under Argo CD's own repo-server and cmp-server
code (tests/oracles/argocd_harness.py), against an oracle the generator computes by itself (Python's
fnmatch, whose `*` crosses `/` as gobwas's does). The four layouts of issue 29 are named cases.
"""

from __future__ import annotations

import fnmatch
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_disagg.cli import main
from kubectl_disagg.core.api import naming
from kubectl_disagg.errors import UserError
from kubectl_disagg.gitops import directory
from kubectl_disagg.rollout import git_run as run
from kubectl_disagg.inputs import tree as inputs
from kubectl_disagg.manifests.reader import parse_stream
from kubectl_disagg.core.delivery.status import NextAction
from kubectl_disagg.rollout.git_status import GitLooks
from tests.support.gitops import step_paths
from tests.fakes.cluster import MemorySession
from tests.oracles.argocd_sidecar import ArgoCD
from tests.support.paths import EXAMPLES

NS = "serving"  # the Application's destination in the harness, and -n at the terminal
APP = "apps/llama"
EXAMPLE = (EXAMPLES / "prefill-decode.yaml").read_text()


IMAGE = "vllm/vllm-openai:v0.11.0"  # the example's


def a_set(name: str, image: str = IMAGE) -> str:
    text = EXAMPLE.replace("name: llama\n", f"name: {name}\n", 1).replace("  namespace: serving\n", "")
    assert IMAGE in text
    return text.replace(IMAGE, image)


def a_configmap(name: str) -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {NS}\ndata:\n  a: b\n"


# Argo CD's own files and others no command may read: each would break a reading or add a set.
DOT_FILES = {
    ".argocd-source.yaml": "plugin:\n  env: []\n",  # Argo CD merges it into the source: not a manifest
    ".argocd-source-llama.yaml": "plugin:\n  env: []\n",
    ".argocd-app.yaml": "not: [a manifest\n",
    ".git/config": "[core]\n",
    ".hidden/ds.yaml": a_set("hidden"),
    ".disagg-rollout-state.yaml.x1y2": "kind: RolloutState\n",  # a write cut short
}


# --- the oracle -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    sets: tuple[tuple[str, str, bool], ...]  # (name, folder, has a state)
    configmaps: tuple[tuple[str, str], ...]  # (name, folder)
    recurse: bool
    include: tuple[str, ...] | None  # None: the default
    exclude: tuple[str, ...]
    empty: tuple[str, ...] = ()  # folders holding an empty manifest
    links: bool = False  # a link to the first configmap beside it, and a linked directory

    def path(self, folder: str, name: str) -> str:
        return f"{folder}/{name}" if folder else name

    def chosen(self, relative: str) -> bool:
        """Whether Argo CD's globs (gobwas, `*` crossing `/`) and the walk take the file."""
        if "/" in relative and not self.recurse:
            return False
        include = self.include or inputs.DEFAULT_INCLUDE
        matches = lambda patterns: any(fnmatch.fnmatchcase(relative, p) for p in _braces(patterns))  # noqa: E731
        return matches(include) and not matches(self.exclude)

    def expected(self) -> dict:
        """{set name: whether its state is read}, and the configmaps read (a link reads one twice)."""
        sets = {name: state for name, folder, state in self.sets if self.chosen(self.path(folder, f"{name}.yaml"))}
        configmaps = [name for name, folder in self.configmaps if self.chosen(self.path(folder, f"{name}.yaml"))]
        if self.links and self.configmaps:
            name, folder = self.configmaps[0]
            if self.chosen(self.path(folder, "link.yaml")):
                configmaps.append(name)
        return {"sets": sets, "configmaps": sorted(configmaps)}

    @property
    def default_globs(self) -> bool:
        return self.include is None and not self.exclude

    def parameters(self) -> list[dict]:
        out = [{"name": "recurse", "string": str(self.recurse).lower()}]
        if self.include is not None:
            out.append({"name": "include", "array": list(self.include)})
        if self.exclude:
            out.append({"name": "exclude", "array": list(self.exclude)})
        return out


def _braces(patterns) -> list[str]:
    out = []
    for pattern in patterns:
        if "{" in pattern:
            head, rest = pattern.split("{", 1)
            body, tail = rest.split("}", 1)
            out.extend(f"{head}{part}{tail}" for part in body.split(","))
        else:
            out.append(pattern)
    return out


def build(root: Path, layout: Layout) -> Path:
    """The application directory at root/apps/llama: sets (those with a state initialised at
    one image, then changed in git: the state is read exactly when the old revision renders),
    configmaps, Argo CD's dot-files, empty files, links."""
    app = root / APP
    for name, folder, state in layout.sets:
        target = app / layout.path(folder, f"{name}.yaml")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(a_set(name))
        if state:
            assert cli(["rollout", "state", "init", "-f", str(target), "-n", NS])[0] == 0
            target.write_text(a_set(name, image="vllm/vllm-openai:v0.12.0"))
    for name, folder in layout.configmaps:
        target = app / layout.path(folder, f"{name}.yaml")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(a_configmap(name))
    for relative, content in DOT_FILES.items():
        (app / relative).parent.mkdir(parents=True, exist_ok=True)
        (app / relative).write_text(content)
    for folder in layout.empty:
        (app / folder).mkdir(parents=True, exist_ok=True)
        (app / layout.path(folder, "empty.yaml")).write_text("")
    if layout.links and layout.configmaps:
        name, folder = layout.configmaps[0]
        (app / layout.path(folder, "link.yaml")).symlink_to(f"{name}.yaml")
        (app / "sub").mkdir(exist_ok=True)
        (app / "linked").symlink_to("sub", target_is_directory=True)
    return app


# --- what each reader read -------------------------------------------------------------------


def cli(argv: list[str]) -> tuple[int, str, str]:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
            code = 0
        except SystemExit as exited:
            code = exited.code if isinstance(exited.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def seen_in(objects: list[dict]) -> dict:
    """{set: whether its state was read} and configmaps from rendered objects: a state
    initialised at the first image renders that revision at full size beside the new one."""
    revisions: dict[str, set] = {}
    for obj in objects:
        labels = obj["metadata"].get("labels") or {}
        if obj["kind"] == "LeaderWorkerSet":
            revisions.setdefault(labels[naming.NAME_LABEL], set()).add(labels[naming.REVISION_LABEL])
    return {"sets": {name: len(found) > 1 for name, found in revisions.items()},
            "configmaps": sorted(o["metadata"]["name"] for o in objects if o["kind"] == "ConfigMap")}


def terminal_flags(layout: Layout) -> list[str]:
    return ["-R"] if layout.recurse else []


def render_terminal(app: Path, layout: Layout) -> list[dict]:
    code, out, err = cli(["render", "-f", str(app), "-n", NS, *terminal_flags(layout)])
    assert code == 0, err
    return [d for d in yaml.safe_load_all(out) if d]


def library_reads(app: Path, layout: Layout) -> dict:
    """What `rollout step --gitops` and `rollout status --gitops` read (their library calls,
    against an empty namespace): a set whose state is read steps from it and waits for its
    sync; one without steps from nothing to a first state."""
    reading = inputs.Reading(layout.recurse)
    steps = step_paths(MemorySession(watches=False), [str(app)], reading, NS)
    cluster = MemorySession(watches=False)
    look = GitLooks(cluster, directory.read([str(app)], reading, namespace=NS, fallback=NS,
                                            explicit_must_hold=True)).look()
    return {"step": {r.ds.name: r.step.before is not None for r in steps},
            "status": {s.report.name: s.report.sync.next_action == NextAction.SYNC for s in look}}


def check_agreement(tmp_path: Path, layout: Layout) -> None:
    expected = layout.expected()
    argocd = ArgoCD(tmp_path, {})
    app = build(argocd.repo, layout)
    answer = argocd.manifests(APP, {"name": "kubectl-disagg", "parameters": layout.parameters()})
    if not expected["sets"]:  # discovery finds no set: Argo CD refuses the plugin
        assert "could not find cmp-server plugin" in (answer.get("error") or ""), answer
        return
    assert not answer.get("error"), answer["error"]
    generated = answer["manifests"]
    assert seen_in(generated) == expected
    if not layout.default_globs:
        return  # the terminal commands read with the default globs
    rendered = render_terminal(app, layout)
    assert seen_in(rendered) == expected
    assert [_plain(o) for o in generated] == rendered  # render -f DIR is what Argo CD applies
    code, out, err = cli(["validate", "-f", str(app), "-n", NS, *terminal_flags(layout)])
    assert code == 0, err
    assert _named(out) == sorted(expected["sets"])
    if expected["sets"]:
        reads = library_reads(app, layout)
        assert reads["step"] == expected["sets"] and reads["status"] == expected["sets"]
        copy = tmp_path / "init"
        shutil.copytree(app, copy, symlinks=True)
        code, out, err = cli(["rollout", "state", "init", "-f", str(copy), "-n", NS, *terminal_flags(layout)])
        with_state = sorted(name for name, state in expected["sets"].items() if state)
        if with_state:
            assert code == 1 and _named(err) == with_state, err
        else:
            assert code == 0 and _named(out) == sorted(expected["sets"]), (out, err)


def _named(text: str) -> list[str]:
    """The sets a command's lines name (`... disaggregatedset/NAME ...`), sorted."""
    return sorted(line.split("disaggregatedset/")[1].split(" ")[0] for line in text.splitlines()
                  if "disaggregatedset/" in line)


def _plain(obj: dict) -> dict:
    """An object as render prints it: without what Argo CD and the plugin stamp on it."""
    metadata = dict(obj["metadata"])
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items()
                   if k not in ("argocd.argoproj.io/tracking-id", naming.SOURCE_REVISION_ANNOTATION)}
    metadata.pop("annotations", None)
    if annotations:
        metadata["annotations"] = annotations
    return {**obj, "metadata": metadata}


# --- the four layouts of issue 29, named ------------------------------------------------------


def test_defect_1_a_set_in_a_subdirectory_finds_its_state(tmp_path):
    check_agreement(tmp_path, Layout((("alpha", "", True), ("beta", "sub", True)), (), True, None, ()))


def test_defect_2_include_leaves_sets_out_with_their_states(tmp_path):
    check_agreement(tmp_path, Layout((("alpha", "", True), ("beta", "sub", True)), (), True, ("sub/*.yaml",), ()))


def test_defect_2_exclude_too(tmp_path):
    check_agreement(tmp_path, Layout((("alpha", "", True), ("beta", "sub", True), ("gamma", "sub", False)), (),
                                     True, None, ("sub/beta.yaml",)))


def test_defect_3_argo_cds_own_files_are_skipped_by_every_command(tmp_path):
    check_agreement(tmp_path, Layout((("alpha", "", False), ("beta", "", True)), (("settings", ""),), False,
                                     None, ()))


def test_an_empty_file_a_link_and_a_linked_directory(tmp_path):
    check_agreement(tmp_path, Layout((("alpha", "", True), ("beta", "sub", False)), (("settings", ""),), True,
                                     None, (), empty=("", "sub"), links=True))


# --- generated trees --------------------------------------------------------------------------

FOLDERS = ["", "sub", "sub/deeper", "other"]


@st.composite
def layouts(draw):
    count = draw(st.integers(1, 3))
    sets = tuple((f"s{i}", draw(st.sampled_from(FOLDERS)), draw(st.booleans())) for i in range(count))
    configmaps = tuple((f"c{i}", draw(st.sampled_from(FOLDERS))) for i in range(draw(st.integers(0, 2))))
    recurse = draw(st.booleans())
    include = draw(st.sampled_from([None, ("*.yaml",), ("s*.yaml", "c*.yaml")]
                                   + ([("sub/*.yaml",), ("{sub,other}/*", "*.yaml")] if recurse else [])))
    exclude = draw(st.sampled_from([(), ("other/*",), ("sub/deeper/*",), ("*c0.yaml",)]))
    empty = tuple(draw(st.sets(st.sampled_from(FOLDERS), max_size=2)))
    return Layout(sets, configmaps, recurse, include, exclude, empty, draw(st.booleans()))


# Each example runs Argo CD's repo-server and cmp-server code once and every command: fewer
# examples than hypothesis's default, for the 2-core machines the suite runs on.
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layouts())
def test_every_reader_reads_a_generated_tree_alike(tmp_path_factory, layout):
    check_agreement(tmp_path_factory.mktemp("tree"), layout)


# --- the pipeline's own rules -----------------------------------------------------------------


@pytest.mark.parametrize("pattern, path, matches", [
    ("*.yaml", "a.yaml", True), ("*.yaml", "sub/a.yaml", True), ("sub/*.yaml", "a.yaml", False),
    ("**/*.yaml", "sub/deeper/a.yaml", True), ("?.yaml", "ab.yaml", False), ("[ab].yaml", "b.yaml", True),
    ("[!ab].yaml", "b.yaml", False), ("{a,b}.yaml", "b.yaml", True), ("{a,b}.yaml", "c.yaml", False),
    ("\\*.yaml", "a.yaml", False), ("\\*.yaml", "*.yaml", True),
])
def test_globs_match_as_gobwas_without_separators(pattern, path, matches):
    assert bool(inputs.glob_regex(pattern).fullmatch(path)) == matches


def test_dot_names_are_never_listed_and_linked_directories_never_entered(tmp_path):
    for relative, content in {**DOT_FILES, "a.yaml": "", "sub/b.yaml": "", "sub/.c.yaml": ""}.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(content)
    (tmp_path / "linked").symlink_to("sub", target_is_directory=True)
    assert sorted(inputs.list_tree(str(tmp_path), True)) == ["a.yaml", "sub/b.yaml"]
    assert inputs.list_tree(str(tmp_path), False) == ["a.yaml"]


def test_a_file_holding_argo_cds_skip_marker_is_not_read():
    tree = inputs.walked("", {"a.yaml": a_configmap("a").encode(),
                                 "b.yaml": b"# +argocd:skip-file-rendering\nkind: [\n"}, inputs.Reading())
    assert tree.chosen == ("a.yaml",)


def test_a_state_naming_no_set_of_the_directory_is_refused_but_a_left_out_ones_is_not(tmp_path):
    state = _state_of("alpha")
    files = {"alpha.yaml": a_set("alpha").encode(), "disagg-rollout-state.yaml": state}
    left_out = inputs.walked("", files, inputs.Reading(exclude=("alpha.yaml",)))
    assert directory.load(left_out, namespace=NS).sets == []
    renamed = inputs.walked("", {**files, "alpha.yaml": a_set("other").encode()}, inputs.Reading())
    with pytest.raises(UserError, match="not a set of this directory"):
        directory.load(renamed, namespace=NS)


def test_a_rollout_state_in_a_manifest_is_refused():
    tree = inputs.walked("", {"alpha.yaml": a_set("alpha").encode() + b"---\n" + _state_of("alpha")},
                            inputs.Reading())
    with pytest.raises(UserError, match="is read from the state file beside its set"):
        directory.load(tree, namespace=NS)


def test_an_explicit_state_file_must_hold_the_sets_state_to_render(tmp_path):
    (tmp_path / "alpha.yaml").write_text(a_set("alpha"))
    (tmp_path / "other.yaml").write_text("")
    reading = inputs.Reading(explicit=str(tmp_path / "other.yaml"))
    assert directory.read([str(tmp_path / "alpha.yaml")], reading, namespace=NS).sets[0].state is None
    with pytest.raises(UserError, match="holds no rollout state for disaggregatedset/alpha"):
        directory.read([str(tmp_path / "alpha.yaml")], reading, namespace=NS, explicit_must_hold=True)


def _state_of(name: str) -> bytes:
    from kubectl_disagg.gitops.state import state_document
    from kubectl_disagg.gitops.step import initial_state
    from kubectl_disagg.manifests.writer import to_yaml

    (ds,) = [e.ds for e in directory.load(inputs.walked("", {"x.yaml": a_set(name).encode()},
                                                           inputs.Reading()), namespace=NS).sets]
    return to_yaml(state_document(initial_state(ds, NS))).encode()


def test_the_state_file_name_is_a_parameter(tmp_path):
    files = {"alpha.yaml": a_set("alpha").encode(), "states.yaml": _state_of("alpha")}
    reading = inputs.Reading(state_name="states.yaml")
    (entry,) = directory.load(inputs.walked("", files, reading), reading, namespace=NS).sets
    assert entry.state is not None and entry.state_path == "states.yaml"


def test_the_explicit_state_file_in_a_walked_directory_is_no_manifest(tmp_path):
    (tmp_path / "alpha.yaml").write_text(a_set("alpha"))
    (tmp_path / "llm-state.yaml").write_bytes(_state_of("alpha"))
    reading = inputs.Reading(explicit=str(tmp_path / "llm-state.yaml"))
    (entry,) = directory.read([str(tmp_path)], reading, namespace=NS, explicit_must_hold=True).sets
    assert entry.state is not None and entry.state_path == str(tmp_path / "llm-state.yaml")
    with pytest.raises(UserError, match="is read from the state file beside its set"):
        directory.read([str(tmp_path)], namespace=NS)  # without --state it is a manifest holding a state


POLICY_OF = """\
---
apiVersion: {api_version}
kind: {kind}
metadata: {{name: llama, namespace: serving}}
spec:
  targetRef: {{name: llama}}
  waves: [{{slices: 1, pause: {{}}}}]
"""


@pytest.mark.parametrize(("api_version", "kind", "line"), [
    ("kubectl-disagg.x-k8s.io/v1beta1", "RolloutPolicy", "apiVersion: no matches for kind \"RolloutPolicy\" in "
     "version \"kubectl-disagg.x-k8s.io/v1beta1\""),
    ("kubectl-disagg.x-k8s.io/v1alpha1", "RolloutPolcy", "kind: no matches for kind \"RolloutPolcy\""),
    ("disaggregatedset.x-k8s.io/v2", "DisaggregatedSetRoleScaler", "apiVersion: no matches for kind "
     "\"DisaggregatedSetRoleScaler\" in version \"disaggregatedset.x-k8s.io/v2\""),
])
def test_a_document_of_our_groups_we_do_not_read_is_refused_by_every_command(tmp_path, api_version, kind, line):
    """Issue 37 item 1: a policy of an unknown version passed through render and was read as no
    policy, so its rollout started every slice at once. Refused at FILE:LINE by the reader."""
    path = tmp_path / "llama.yaml"
    path.write_text(EXAMPLE + POLICY_OF.format(api_version=api_version, kind=kind))
    start = len(EXAMPLE.splitlines()) + (2 if line.startswith("apiVersion") else 3)
    for argv in (["validate"], ["render"], ["rollout", "plan"]):
        code, out, err = cli([*argv, "-f", str(path)])
        assert code == 1 and out == "", (argv, err)
        assert err.startswith(f"{path}:{start}: {line}"), (argv, err)
    assert inputs.unread_kind(parse_stream(EXAMPLE, "x")[0]) is None


# --- issue 37 item 11: one file named two ways is one file ------------------------------------

SPELLINGS = {  # (working directory, -f inputs, --state), each naming app/ and app/other-state.yaml
    "-f absolute, --state relative": ("app", ["{app}"], "other-state.yaml"),
    "-f relative, --state absolute": ("app", ["."], "{app}/other-state.yaml"),
    "-f relative, --state through ..": (".", ["app"], "app/sub/../other-state.yaml"),
    "-f through a link, --state real": (".", ["linked-app"], "app/other-state.yaml"),
    "-f the files, --state absolute": ("app", ["llama.yaml", "other-state.yaml"], "{app}/other-state.yaml"),
}


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_issue37_item11_a_state_file_named_two_ways_is_read_as_the_state_it_is(tmp_path, monkeypatch, spelling):
    """`rollout step --gitops -f /abs/app --state other-state.yaml` run inside /abs/app wrote its
    first state, then read it back as a manifest ("kind: a RolloutState is read from the state
    file beside its set ... not from a manifest"): -f and --state named one file two ways. Every
    later step, and render, reads the file --state names as the set's state however each spells it."""
    app = tmp_path / "app"
    (app / "sub").mkdir(parents=True)
    (app / "llama.yaml").write_text(EXAMPLE)
    (tmp_path / "linked-app").symlink_to("app", target_is_directory=True)
    where, named_inputs, state = SPELLINGS[spelling]
    monkeypatch.chdir(app if where == "app" else tmp_path)
    named_inputs = [path.format(app=app) for path in named_inputs]
    reading = inputs.Reading(explicit=state.format(app=app))
    for _ in range(2):  # the first step writes the state, the second reads it
        named = [path for path in named_inputs if Path(path).exists()]  # (-f the state file: once written)
        (result,) = step_paths(MemorySession(watches=False), named, reading, NS)
        run.write_steps([result])
        assert result.path == reading.explicit
    assert result.step.before is not None and (app / "other-state.yaml").exists()
    assert not (app / naming.STATE_FILE).exists()
    code, out, err = cli(["render", "-n", NS, *(f for path in named_inputs for f in ("-f", path)),
                          "--state", reading.explicit])
    assert (code, err) == (0, "") and "kind: RolloutState" not in out
