"""The house by concern: each package imports only the packages below it, and none imports in a cycle.

The layers, lowest first: `errors` (problems for people), `exits` (every command's exit codes),
`clock` (the one clock: wall time and monotonic seconds), `manifests` (reading and writing YAML/JSON, the document source type), `core` (the pure domain:
model, validation, revision, planner, render, reconcile, status), `inputs` (the one input reader:
files, directories, globs and state files read from disk once per command), `wait` (the one wait: a deadline and a watch reaction loop), `kube` (the API
server: the client wing `kube.client` behind its face, the session, the executor, the lease),
`rollout` (passes against a cluster: stepper, write scheduling, a run of steps, events, live plan,
hand-over), `gitops` (the rollout state in git), `argocd` (the config management plugin), `views`
(printers and templates), `commands` (flags → one library call → one view, each under 150 lines).
`cli` is the process entry on top.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from tests.support.paths import PACKAGE


LAYERS = ["errors", "exits", "clock", "manifests", "core", "inputs", "wait", "kube", "rollout", "gitops", "argocd", "views", "commands",
          "cli"]


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path, *, for_types: bool = True) -> set[str]:
    """The modules of ours `path` imports; without `for_types`, those it imports when it runs
    (an `if TYPE_CHECKING:` block is read by the type checker alone)."""
    found = set()
    tree = ast.parse(path.read_text(), str(path))
    if not for_types:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kubectl_disagg"):
            if node.module == "kubectl_disagg":
                found.update(f"kubectl_disagg.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("kubectl_disagg"))
    return found


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


MODULES = {_module_name(path): _imports(path) for path in sorted(PACKAGE.rglob("*.py"))}
RUNTIME_IMPORTS = {_module_name(path): _imports(path, for_types=False) for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_module_lives_in_a_layer():
    """No module floats beside the packages: the folder names say where every rule lives."""
    homeless = sorted(m for m in MODULES if _layer(m) not in LAYERS + ["__main__", None])
    assert homeless == []


# The one view the layers below views/ may call: the words of why a paced rollout stops
# (core.waves decides it as data; the pacers record the words in a pass and a RolloutState).
PHRASED_BELOW_VIEWS = {"kubectl_disagg.views.stops"}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_upward(module):
    mine = _layer(module)
    if mine not in LAYERS:
        return
    upward = sorted(target for target in MODULES[module] - PHRASED_BELOW_VIEWS
                    if _layer(target) in LAYERS and LAYERS.index(_layer(target)) > LAYERS.index(mine))
    assert upward == [], f"{module} imports a higher layer"


def test_the_view_phrased_below_views_stands_on_core():
    """What the pacers may call from views/ imports nothing above core/, so calling it climbs no
    layer it could not reach itself; and core/ spells no command line (views/stops.py does)."""
    for module in PHRASED_BELOW_VIEWS:
        assert sorted(t for t in MODULES[module] if LAYERS.index(_layer(t)) > LAYERS.index("core")) == []
    spelled = sorted(str(path.relative_to(PACKAGE)) for path in (PACKAGE / "core").rglob("*.py")
                     if "kubectl disagg rollout" in path.read_text())
    assert spelled == []


def test_no_import_cycle():
    """No cycle among the imports that run: two modules may name each other's types for the type
    checker (`if TYPE_CHECKING:`), which the layers above still count."""
    graph = {m: {t for t in targets if t in MODULES and t != m} for m, targets in RUNTIME_IMPORTS.items()}
    done: set[str] = set()

    def visit(module: str, stack: list[str]) -> None:
        if module in stack:
            raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(module):] + [module]))
        if module in done:
            return
        for target in sorted(graph[module]):
            visit(target, stack + [module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


CLIENT = "kubectl_disagg.kube.client"


def test_the_client_is_reached_through_its_face():
    """`kube/client/` is one box: outside it, modules import its face (`kubectl_disagg.kube.client`)
    and never a module inside it, neither by an import statement nor by a name loaded later
    ("module:attribute" strings)."""
    reaching_in = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        if module == CLIENT or module.startswith(CLIENT + "."):
            continue
        tree = ast.parse(path.read_text(), str(path))
        named = {node.value.split(":")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str)
                 and node.value.startswith(CLIENT + ".")}
        reaching_in += [f"{module} -> {target}" for target in sorted(MODULES[module] | named)
                        if target.startswith(CLIENT + ".")]
    assert reaching_in == []


LONG_MODULE_LINES = 450
EXPLAINED_PACKAGES = ("manifests", "core", "inputs", "kube", "rollout", "gitops", "argocd", "views", "commands")


@pytest.mark.parametrize("path", sorted(path for package in EXPLAINED_PACKAGES
                                        for path in (PACKAGE / package).rglob("*.py")),
                         ids=lambda path: str(path.relative_to(PACKAGE)))
def test_a_long_module_says_why_it_is_long(path):
    """A module past LONG_MODULE_LINES either is split or says at its top why it is one module
    ("About N lines on purpose: ..."; a reader deciding where to look first needs the reason,
    measured where it is a cost)."""
    text = path.read_text()
    if len(text.splitlines()) <= LONG_MODULE_LINES:
        return
    top = "\n".join((ast.get_docstring(ast.parse(text)) or "").splitlines()[:12])
    assert "lines on purpose" in top, f"{path.relative_to(PACKAGE)} has {len(text.splitlines())} lines and no word on why"


# Views draw what the decisions carry (the actions' objects, the API server's answer to a refused
# write): none reads the cluster client's modules. (views.status waited with kube/wait.py; the
# one wait is wait.py now, below kube/.)
VIEWS_STILL_IMPORTING_KUBE: set[str] = set()


def test_no_view_imports_the_cluster_client():
    importing = sorted(module for module, targets in MODULES.items()
                       if _layer(module) == "views" and any(_layer(target) == "kube" for target in targets))
    assert importing == sorted(VIEWS_STILL_IMPORTING_KUBE), "a view imports kube/ (or one no longer does)"


COMMAND_LINES = 150


@pytest.mark.parametrize("path", sorted((PACKAGE / "commands").glob("*.py")), ids=lambda path: path.name)
def test_commands_are_thin(path):
    """A command is flags → one library call → one view: anything longer holds rules that
    belong to a library package (and its tests) or to views/."""
    lines = len(path.read_text().splitlines())
    assert lines < COMMAND_LINES, f"commands/{path.name} has {lines} lines"


def _reached(module: str, at_import: bool = False) -> set[str]:
    """Every kubectl_disagg module importing `module` may load, by its import statements (a name
    imported from a package counts as its submodule when it is one); `at_import`: only those
    loaded when it is imported (its module-level imports, not those a function makes when called)."""
    def targets(name: str) -> set[str]:
        found = set()
        tree = ast.parse(_path_of(name).read_text())
        for node in (tree.body if at_import else ast.walk(tree)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kubectl_disagg"):
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names
                             if f"{node.module}.{alias.name}" in MODULES)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name.startswith("kubectl_disagg"))
        parents = {".".join(t.split(".")[:i]) for t in found for i in range(2, t.count(".") + 1)}
        return {t for t in found | parents if t in MODULES}

    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(targets(name) - seen)
    return seen


def _path_of(module: str) -> pathlib.Path:
    relative = pathlib.Path(*module.split("."))
    package = PACKAGE.parent / relative / "__init__.py"
    return package if package.exists() else (PACKAGE.parent / relative).with_suffix(".py")


def test_render_is_offline():
    """`render` (the Argo CD plugin's generate, `render | kubectl apply`) never reaches the
    cluster client: nothing under kube/ is loaded, whatever the flags."""
    reached = _reached("kubectl_disagg.commands.render") | _reached("kubectl_disagg.cli")
    assert sorted(m for m in reached if _layer(m) in ("kube", "rollout")) == []


def test_rollout_status_loads_the_git_rollout_and_the_text_view_only_when_asked():
    """`rollout status -f` reads the live objects and derives the controller's status; the
    `--gitops` mode and the `-o text` view (a Jinja2 template) are imported where they are chosen.
    It loads nothing of gitops/ (the -f inputs are loaded by `inputs.directory`)."""
    reached = _reached("kubectl_disagg.commands.rollout_status", at_import=True)
    assert sorted(m for m in reached if _layer(m) == "gitops" or m == "kubectl_disagg.views.templating") == []


def test_imports_at_import_time_only_is_narrower():
    """The check above can fail: the command's modes do reach gitops/ and the template engine."""
    reached = _reached("kubectl_disagg.commands.rollout_status")
    assert "kubectl_disagg.gitops.watch" in reached
    assert "kubectl_disagg.views.templating" in reached


def test_kinds_and_api_versions_are_spelled_once():
    """Each kind, API group and version, and each label or annotation key, is a constant of
    `core/naming.py`; a second spelling elsewhere is how a rename leaves one place behind."""
    from kubectl_disagg.core import naming

    spellings = {naming.LWS_KIND, naming.LWS_GROUP, naming.LWS_API_VERSION, naming.SERVICE_KIND,
                 naming.SET_KIND, naming.SET_GROUP, naming.SET_API_VERSION, naming.SCALER_KIND,
                 naming.POLICY_KIND, naming.STATE_KIND, naming.PLUGIN_GROUP, naming.PLUGIN_API_VERSION}
    prefixes = (naming.LABEL_PREFIX, naming.LWS_PREFIX, naming.ARGOCD_PREFIX, "app.kubernetes.io/")  # label keys
    found = sorted({str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                    for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.Constant) and (node.value in spellings or isinstance(node.value, str)
                                                           and node.value.startswith(prefixes))} - {"core/naming.py"})
    assert found == []


def test_each_type_name_means_one_thing():
    """A class name is defined in one module only (module-private `_Names` aside): two types
    under one name send a reader to the wrong one."""
    defined: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                defined.setdefault(node.name, []).append(str(path.relative_to(PACKAGE)))
    assert {name: paths for name, paths in defined.items() if len(paths) > 1} == {}


def test_a_plain_set_renders_without_the_rules_of_states_and_policies():
    """`render -f` of a set with no rollout state and no RolloutPolicy (`render | kubectl apply`,
    the plugin at rest) loads neither the rules a state must keep (design §8: the replay, the
    reconcile pass) nor the policy reader and its PromQL parser: they load where a state or a
    policy is read. Their import is most of render's start-up above its floor (BENCHMARKS.md)."""
    loaded = _reached("kubectl_disagg.commands.render", at_import=True) | _reached(
        "kubectl_disagg.gitops.directory", at_import=True)
    heavy = {"kubectl_disagg.gitops.state", "kubectl_disagg.gitops.render", "kubectl_disagg.gitops.rules",
             "kubectl_disagg.core.reconcile",
             "kubectl_disagg.core.policy", "kubectl_disagg.core.analysis", "kubectl_disagg.core.promql"}
    assert sorted(loaded & heavy) == []
    assert heavy <= _reached("kubectl_disagg.gitops.directory"), "the check above can fail: they are reachable"


def test_the_shared_pipeline_sits_below_gitops():
    """Read → sets → render is `inputs/` (the reader, `inputs.directory`'s loading and steady
    render); `render` imports no module of gitops/ when it is loaded, and `gitops.directory`
    calls the pipeline for the sets with a rollout state rather than holding one of its own."""
    assert sorted(m for m in _reached("kubectl_disagg.commands.render", at_import=True) if _layer(m) == "gitops") == []
    assert "kubectl_disagg.inputs.directory" in MODULES["kubectl_disagg.gitops.directory"]
    holders = sorted(module for module, path in ((_module_name(p), p) for p in sorted(PACKAGE.rglob("*.py")))
                     for node in ast.parse(path.read_text()).body
                     if isinstance(node, ast.ClassDef) and node.name in ("Directory", "SetEntry", "LoadResult"))
    assert holders == ["kubectl_disagg.inputs.directory", "kubectl_disagg.inputs.directory"]


# The one input reader (issue 38): `inputs/` lists directories and opens the files a command
# reads (manifests, state files, stdin); nothing else does. The cluster client reads its own
# files (kubeconfig, tokens, certificates) and `manifests/crds.py` the CRDs shipped in the package:
# neither is a command's input.
READS_ITS_OWN_FILES = ("kubectl_disagg.inputs", "kubectl_disagg.kube.client", "kubectl_disagg.manifests.crds")
READING_CALLS = {"open", "walk", "listdir", "scandir", "iterdir", "read_bytes", "read_text", "glob", "rglob", "stdin"}


def _reading(path: pathlib.Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            found.append(f"open() at line {node.lineno}")
        elif isinstance(node, ast.Attribute) and node.attr in READING_CALLS - {"open"}:
            if node.attr == "stdin" and not (isinstance(node.value, ast.Name) and node.value.id == "sys"):
                continue
            found.append(f".{node.attr} at line {node.lineno}")
    return found


def test_one_input_reader():
    """Only `inputs/` lists a directory or opens an input file: a second walk is a second set of
    rules for dot-files, globs and missing files (manifests/reader and gitops/directory had one
    each, and disagreed)."""
    readers = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        if any(module == allowed or module.startswith(allowed + ".") for allowed in READS_ITS_OWN_FILES):
            continue
        if found := _reading(path):
            readers[module] = found
    assert readers == {}


# The one writer of files (issue 47): a temporary file beside the file, renamed over it, the
# file's mode kept and the temporary file removed on any failure. Three writers had each their
# own (the -f edits, the state files and their restore, the kubeconfig's tokens) and the restore
# wrote mode 0600 and could leave its temporary file behind.
ATOMIC_WRITER = "kubectl_disagg.manifests.writer"


def test_one_atomic_file_writer():
    writers = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in ("replace", "rename", "mkstemp", "NamedTemporaryFile") \
                    and isinstance(node.value, ast.Name) and node.value.id in ("os", "tempfile"):
                writers.setdefault(_module_name(path), []).append(f"{node.value.id}.{node.attr} at line {node.lineno}")
    assert set(writers) <= {ATOMIC_WRITER}, writers


# Where `clock` still means another thing (a callable of a datetime, epoch seconds): the rollout
# verbs and step being folded (issue 38), and the analysis run's epoch seconds. Shrinks, never grows.
CLOCKS_NOT_YET_A_CLOCK: set[str] = set()


def test_a_clock_is_the_one_clock():
    """A parameter named `clock` is a `kubectl_disagg.clock.Clock` (wall time and monotonic
    seconds, one injected type): it once meant monotonic seconds, a datetime or epoch seconds,
    each a different callable."""
    others = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.arg) and node.arg == "clock" and ast.unparse(node.annotation or node) != "Clock":
                others.setdefault(module, []).append(node.lineno)
    assert sorted(others) == sorted(CLOCKS_NOT_YET_A_CLOCK)


def test_inputs_are_loaded_in_one_place():
    """A command's documents become sets in one place, `inputs.directory` (through
    `core.sets.load_documents`): no second loader beside it in the package (a set read from the
    cluster is loaded by `core.sets.set_from_object`, one object at a time)."""
    callers = sorted(_module_name(path) for path in sorted(PACKAGE.rglob("*.py"))
                     for node in ast.walk(ast.parse(path.read_text()))
                     if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
                     in ("load_documents", "load_sets"))
    assert sorted(set(callers)) == ["kubectl_disagg.core.sets", "kubectl_disagg.inputs.directory"]
# The mode is a store, not a fork (issue 38, design §9.8): `rollout/` defines where a position is
# kept (`PositionStore`) and runs each verb once over it; `gitops/` implements it over the state
# file; only `commands/` picks a store and hands it to the verbs.
STORE_PROTOCOL = "kubectl_disagg.rollout.store"
STORES = {"ClusterStore": "kubectl_disagg.rollout.store", "GitStore": "kubectl_disagg.gitops.store"}


def _classes(module: str) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in ast.parse(_path_of(module).read_text()).body if isinstance(node, ast.ClassDef)}


def _members(node: ast.ClassDef) -> set[str]:
    names = {item.name for item in node.body if isinstance(item, ast.FunctionDef) and not item.name.startswith("_")}
    names |= {item.target.id for item in node.body if isinstance(item, ast.AnnAssign)
              and isinstance(item.target, ast.Name)}
    names |= {target.id for item in node.body if isinstance(item, ast.Assign) for target in item.targets
              if isinstance(target, ast.Name)}
    return names


def test_rollout_defines_the_position_store_and_never_reaches_gitops():
    protocol = _classes(STORE_PROTOCOL)["PositionStore"]
    assert any(isinstance(base, ast.Name) and base.id == "Protocol" for base in protocol.bases)
    reaching = sorted(f"{module} -> {target}" for module, targets in MODULES.items() if _layer(module) == "rollout"
                      for target in targets if _layer(target) == "gitops")
    assert reaching == []


@pytest.mark.parametrize("store", sorted(STORES))
def test_each_store_implements_every_member_of_the_protocol(store):
    wanted = _members(_classes(STORE_PROTOCOL)["PositionStore"])
    assert wanted >= {"together", "sets", "who", "read", "change", "write", "record"}
    assert sorted(wanted - _members(_classes(STORES[store])[store])) == []


def test_only_commands_pick_a_store():
    """A store is made (called by name) in `commands/` alone: the verbs, the views and the
    libraries take the one they are given."""
    making = sorted(f"{_module_name(path)} makes {node.func.id}" for path in sorted(PACKAGE.rglob("*.py"))
                    for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in STORES
                    and _layer(_module_name(path)) != "commands")
    assert making == []
    assert {"kubectl_disagg.rollout.store", "kubectl_disagg.gitops.store"} <= _reached(
        "kubectl_disagg.commands.rollout_verbs")


def test_each_verb_is_written_once():
    """No mode twin of the verbs: one command module, one library, no `gitops/verbs.py`."""
    assert "kubectl_disagg.commands.rollout_verbs_gitops" not in MODULES
    assert "kubectl_disagg.gitops.verbs" not in MODULES


def test_one_pacer_admits_measures_and_admits_again():
    """admit → analyze → re-admit is written once (rollout/pacer.py `pace`), for the cluster's
    stepper and git's step alike: no other module asks which analysis gate is pending."""
    asking = sorted(_module_name(path) for path in sorted(PACKAGE.rglob("*.py"))
                    if "pending_gate" in {node.id for node in ast.walk(ast.parse(path.read_text()))
                                          if isinstance(node, ast.Name)})
    assert asking == ["kubectl_disagg.rollout.analysis", "kubectl_disagg.rollout.pacer"]
    assert "kubectl_disagg.rollout.pacer" in MODULES["kubectl_disagg.rollout.progressive"]
    assert "kubectl_disagg.rollout.pacer" in MODULES["kubectl_disagg.gitops.paced"]
