"""The house by concern: each package imports only the packages below it, and none imports in a cycle.

The layers, lowest first: `errors` (problems for people), `exits` (every command's exit codes),
`clock` (the one clock: wall time and monotonic seconds), `manifests` (reading and writing YAML/JSON, the document source type), `core` (the pure domain, by
concern: `core.api` < `core.controller` < `core.delivery`), `inputs` (the one input reader:
files, directories, globs and state files read from disk once per command), `wait` (the one wait: a deadline and a watch reaction loop), `kube` (the API
server: the client wing `kube.client` behind its face, the session, the executor, the lease),
`gitops` (the git store: the rollout state in git, its rules and render), `rollout` (the rollout
over either store: stepper, write scheduling, a run of steps, events, live plan, hand-over, git's
step and status), `argocd` (the config management plugin), `views`
(printers and templates), `commands` (flags → one library call → one view, each under 150 lines).
`cli` is the process entry on top.

Each rule is a function over a package's source (`Source`): the test named after the rule applies
it to kubectl_disagg, and `test_each_rule_finds_its_planted_violation` applies it to a small tree
planted with exactly one violation, which it must find and name (a rule that cannot fail checks
nothing).
"""

from __future__ import annotations

import ast
import functools
import pathlib
import re
import textwrap

import pytest

from tests.support.paths import PACKAGE


LAYERS = ["errors", "exits", "clock", "manifests", "core", "inputs", "wait", "kube", "gitops", "rollout", "argocd", "views", "commands",
          "cli"]


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    """The nodes inside `if TYPE_CHECKING:` blocks (read by the type checker alone)."""
    return {id(inner) for node in ast.walk(tree)
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            for statement in node.body for inner in ast.walk(statement)}


class Source:
    """A package's modules as the rules read them: names, paths, parsed trees and imports."""

    def __init__(self, package: pathlib.Path):
        self.package = package
        self.paths = {self._name(path): path for path in sorted(package.rglob("*.py"))}
        self._trees: dict[str, ast.Module] = {}
        self._imports: dict[tuple[str, bool], frozenset[str]] = {}

    def _name(self, path: pathlib.Path) -> str:
        parts = path.relative_to(self.package.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    def relative(self, module: str) -> str:
        return str(self.paths[module].relative_to(self.package))

    def text(self, module: str) -> str:
        return self.paths[module].read_text()

    def tree(self, module: str) -> ast.Module:
        if module not in self._trees:
            self._trees[module] = ast.parse(self.text(module), str(self.paths[module]))
        return self._trees[module]

    def nodes(self, module: str) -> list[ast.AST]:
        return list(ast.walk(self.tree(module)))

    def in_layer(self, *layers: str) -> list[str]:
        return [module for module in self.paths if _layer(module) in layers]

    def imports(self, module: str, for_types: bool = True) -> frozenset[str]:
        """The modules of ours `module` imports, at any depth (an import inside a function counts);
        without `for_types`, those it imports when it runs (not `if TYPE_CHECKING:` blocks)."""
        if (module, for_types) not in self._imports:
            self._imports[module, for_types] = self._imported(module, for_types)
        return self._imports[module, for_types]

    def _imported(self, module: str, for_types: bool) -> frozenset[str]:
        skipped = set() if for_types else _type_checking_nodes(self.tree(module))
        found = set()
        for node in self.nodes(module):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kubectl_disagg"):
                if node.module == "kubectl_disagg":
                    found.update(f"kubectl_disagg.{alias.name}" for alias in node.names)
                else:
                    found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name.startswith("kubectl_disagg"))
        return frozenset(found)

    def reached(self, module: str, at_import: bool = False) -> set[str]:
        """Every module of ours importing `module` may load, by its import statements (a name
        imported from a package counts as its submodule when it is one); `at_import`: only those
        loaded when it is imported (its module-level imports, not those a function makes when called)."""
        def targets(name: str) -> set[str]:
            found = set()
            tree = self.tree(name)
            for node in (tree.body if at_import else ast.walk(tree)):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kubectl_disagg"):
                    found.add(node.module)
                    found.update(f"{node.module}.{alias.name}" for alias in node.names
                                 if f"{node.module}.{alias.name}" in self.paths)
                elif isinstance(node, ast.Import):
                    found.update(alias.name for alias in node.names if alias.name.startswith("kubectl_disagg"))
            parents = {".".join(t.split(".")[:i]) for t in found for i in range(2, t.count(".") + 1)}
            return {t for t in found | parents if t in self.paths}

        seen: set[str] = set()
        todo = [module] if module in self.paths else []
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(targets(name) - seen)
        return seen


@functools.cache
def _source() -> Source:
    return Source(PACKAGE)


def homeless(source: Source) -> list[str]:
    return sorted(m for m in source.paths if _layer(m) not in LAYERS + ["__main__", None])


def test_every_module_lives_in_a_layer():
    """No module floats beside the packages: the folder names say where every rule lives."""
    assert homeless(_source()) == []


# The one view the layers below views/ may call: the words of why a paced rollout stops
# (core.delivery.waves decides it as data; the pacers record the words in a pass and a RolloutState).
# Only the pacers call it, from rollout/ and above: the stores below it return data.
PHRASED_BELOW_VIEWS = {"kubectl_disagg.views.stops"}
PHRASING_FROM = "rollout"


def upward_imports(source: Source) -> list[str]:
    found = []
    for module in source.paths:
        mine = _layer(module)
        if mine in LAYERS:
            phrased = PHRASED_BELOW_VIEWS if LAYERS.index(mine) >= LAYERS.index(PHRASING_FROM) else set()
            found += [f"{module} -> {target}" for target in sorted(source.imports(module) - phrased)
                      if _layer(target) in LAYERS and LAYERS.index(_layer(target)) > LAYERS.index(mine)]
    return sorted(found)


def test_no_module_imports_upward():
    assert upward_imports(_source()) == []


def phrased_below_views_climbing(source: Source) -> list[str]:
    return sorted(f"{module} -> {target}" for module in PHRASED_BELOW_VIEWS if module in source.paths
                  for target in source.imports(module)
                  if _layer(target) in LAYERS and LAYERS.index(_layer(target)) > LAYERS.index("core"))


def test_the_view_phrased_below_views_stands_on_core():
    """What the pacers may call from views/ imports nothing above core/, so calling it climbs no
    layer it could not reach itself."""
    assert phrased_below_views_climbing(_source()) == []


@functools.cache
def command_names() -> frozenset[str]:
    """Every command and subcommand name of the click tree (`rollout`, `promote`, `to-plugin`, ...)."""
    import click

    from kubectl_disagg.commands.root import cli

    def walk(group: click.Command | None) -> set[str]:
        if not isinstance(group, click.Group):
            return set()
        context = click.Context(group)
        return {name for sub in group.list_commands(context) for name in {sub, *walk(group.get_command(context, sub))}}

    return frozenset(walk(cli))


def command_line_pattern(names: frozenset[str]) -> re.Pattern[str]:
    """A command line or a flag as core/ would print it: a backticked command (`kubectl disagg ...`
    or any command's or subcommand's name, then a space or the closing backtick: `rollout
    promote`, `status -w`, `handover to-plugin NAME`, but not `pause: {}`) or a `--flag`."""
    words = "|".join(sorted(map(re.escape, {"kubectl disagg", *names}), key=len, reverse=True))
    return re.compile(rf"`(?:{words})(?=[ `])[^`]*`|(?<![\w-])--[a-z][a-z-]*")


def _docstrings(tree: ast.Module) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def _format_values(tree: ast.Module) -> set[int]:
    """The strings of `Literal[...]` types: a format's values (what a state file records, as
    `promote --full` for a gate passed), which a document compares, not a command line to run."""
    return {id(value) for node in ast.walk(tree) if isinstance(node, ast.Subscript)
            and (node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")) == "Literal"
            for value in ast.walk(node.slice)}


def command_lines_in_core(source: Source, names: frozenset[str] | None = None) -> list[str]:
    """`core/FILE:LINE: spelling` for each command line or flag a string of core/ spells (an
    f-string read whole, `{}` for each value it holds, so a command around a name is found; a
    `Literal` type's values are a format's, data)."""
    pattern = command_line_pattern(command_names() if names is None else names)
    found = []
    for module in source.in_layer("core"):
        skipped = _docstrings(source.tree(module)) | _format_values(source.tree(module))
        parts = {id(part) for node in source.nodes(module) if isinstance(node, ast.JoinedStr) for part in node.values}
        found += [f"{source.relative(module)}:{node.lineno}: {spelling}" for node in source.nodes(module)
                  if isinstance(node, ast.expr) and id(node) not in skipped and id(node) not in parts
                  for spelling in pattern.findall(_string(node))]
    return sorted(set(found), key=lambda found: (found.split(":")[0], int(found.split(":")[1]), found))


def _string(node: ast.AST) -> str:
    """A string constant's text, an f-string's with `{}` for each value; else ''."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_string(part) if isinstance(part, ast.Constant) else "{}" for part in node.values)
    return ""


def test_core_spells_no_command_line():
    """Command lines, flags and hints are spelled in views/: core/ says which action is next as
    data (views/stops.py and the other views word it)."""
    spelled = {re.sub(r":\d+:", ":", found) for found in command_lines_in_core(_source())}
    assert sorted(spelled) == [], "core/ spells a command line (views/ words it)"


def cycle(graph: dict[str, set[str]]) -> list[str]:
    """The first import cycle of `graph` (module -> the modules it imports), as `a -> b -> a`."""
    done: set[str] = set()

    def visit(module: str, stack: list[str]) -> list[str]:
        if module in stack:
            return [" -> ".join(stack[stack.index(module):] + [module])]
        if module in done:
            return []
        for target in sorted(graph[module]):
            if found := visit(target, stack + [module]):
                return found
        done.add(module)
        return []

    for module in sorted(graph):
        if found := visit(module, []):
            return found
    return []


def runtime_import_cycle(source: Source) -> list[str]:
    """No cycle among the imports that run: two modules may name each other's types for the type
    checker (`if TYPE_CHECKING:`), which the layers above still count."""
    return cycle({m: {t for t in source.imports(m, for_types=False) if t in source.paths and t != m}
                  for m in source.paths})


def test_no_import_cycle():
    assert runtime_import_cycle(_source()) == []


def core_import_cycle(source: Source) -> list[str]:
    """No cycle among core/'s modules, counting the imports for the type checker too: two
    modules naming each other's types share types that belong in a module below both."""
    core = set(source.in_layer("core"))
    return cycle({m: {t for t in source.imports(m) if t in core and t != m} for m in core})


def test_core_has_no_import_cycle_even_for_types():
    assert core_import_cycle(_source()) == []


# core/ by concern, lowest first: the API as written and checked, what the controller computes
# from it, and the project's own progressive delivery on top.
CORE_PACKAGES = ["api", "controller", "delivery"]


def core_out_of_order(source: Source) -> list[str]:
    """Each of core/'s modules lives in one of its packages (`CORE_PACKAGES`) and imports, when it
    runs, only modules of its own package or one below; the type checker's imports may name a
    type above (a signature), never in a cycle (the rule above)."""
    found = []
    for module in source.in_layer("core"):
        parts = module.split(".")
        if module == "kubectl_disagg.core" or (len(parts) == 3 and parts[2] in CORE_PACKAGES):
            continue
        if len(parts) < 4 or parts[2] not in CORE_PACKAGES:
            found.append(f"{module}: in no package of core")
            continue
        rank = CORE_PACKAGES.index(parts[2])
        for target in sorted(source.imports(module, for_types=False)):
            tparts = target.split(".")
            if _layer(target) == "core" and len(tparts) > 2 and tparts[2] in CORE_PACKAGES \
                    and CORE_PACKAGES.index(tparts[2]) > rank:
                found.append(f"{module} -> {target}")
    return found


def test_core_packages_import_downward_only():
    assert core_out_of_order(_source()) == []


CLIENT = "kubectl_disagg.kube.client"


def reaching_into_the_client(source: Source) -> list[str]:
    """`kube/client/` is one box: outside it, modules import its face (`kubectl_disagg.kube.client`)
    and never a module inside it, neither by an import statement nor by a name loaded later
    ("module:attribute" strings)."""
    reaching_in = []
    for module in source.paths:
        if module == CLIENT or module.startswith(CLIENT + "."):
            continue
        named = {node.value.split(":")[0] for node in source.nodes(module)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str)
                 and node.value.startswith(CLIENT + ".")}
        reaching_in += [f"{module} -> {target}" for target in sorted(source.imports(module) | named)
                        if target.startswith(CLIENT + ".")]
    return sorted(reaching_in)


def test_the_client_is_reached_through_its_face():
    assert reaching_into_the_client(_source()) == []


LONG_MODULE_LINES = 450
EXPLAINED_PACKAGES = ("manifests", "core", "inputs", "kube", "rollout", "gitops", "argocd", "views", "commands")


def long_modules_saying_nothing(source: Source) -> list[str]:
    """A module past LONG_MODULE_LINES either is split or says at its top why it is one module
    ("About N lines on purpose: ..."; a reader deciding where to look first needs the reason,
    measured where it is a cost)."""
    silent = []
    for module in source.in_layer(*EXPLAINED_PACKAGES):
        lines = len(source.text(module).splitlines())
        top = "\n".join((ast.get_docstring(source.tree(module)) or "").splitlines()[:12])
        if lines > LONG_MODULE_LINES and "lines on purpose" not in top:
            silent.append(f"{source.relative(module)} has {lines} lines and no word on why")
    return sorted(silent)


def test_a_long_module_says_why_it_is_long():
    assert long_modules_saying_nothing(_source()) == []


def views_importing_kube(source: Source) -> list[str]:
    """Views draw what the decisions carry (the actions' objects, the API server's answer to a
    refused write): none reads the cluster client's modules."""
    return sorted(module for module in source.in_layer("views")
                  if any(_layer(target) == "kube" for target in source.imports(module)))


def test_no_view_imports_the_cluster_client():
    assert views_importing_kube(_source()) == []


COMMAND_LINES = 150


def fat_commands(source: Source) -> list[str]:
    """A command is flags → one library call → one view: anything longer holds rules that
    belong to a library package (and its tests) or to views/."""
    return sorted(f"{source.relative(module)} has {lines} lines" for module in source.in_layer("commands")
                  if source.paths[module].parent.name == "commands" and (lines := len(source.text(module).splitlines())) >= COMMAND_LINES)


def test_commands_are_thin():
    assert fat_commands(_source()) == []


def loaded(source: Source, roots: tuple[str, ...], wanted, at_import: bool = False) -> list[str]:
    """The modules `wanted` (a predicate) of those importing any of `roots` may load."""
    return sorted(m for root in roots for m in source.reached(root, at_import) if wanted(m))


def test_render_is_offline():
    """`render` (the Argo CD plugin's generate, `render | kubectl apply`) never reaches the
    cluster client: nothing under kube/ is loaded, whatever the flags."""
    assert loaded(_source(), ("kubectl_disagg.commands.render", "kubectl_disagg.cli"),
                  lambda m: _layer(m) in ("kube", "rollout")) == []


def test_rollout_status_loads_the_git_rollout_and_the_text_view_only_when_asked():
    """`rollout status -f` reads the live objects and derives the controller's status; the
    `--gitops` mode and the `-o text` view (a Jinja2 template) are imported where they are chosen.
    It loads nothing of gitops/ (the -f inputs are loaded by `inputs.directory`)."""
    assert loaded(_source(), ("kubectl_disagg.commands.rollout_status",),
                  lambda m: _layer(m) == "gitops" or m == "kubectl_disagg.views.templating", at_import=True) == []


def test_imports_at_import_time_only_is_narrower():
    """The check above can fail: the command's modes do reach gitops/ and the template engine."""
    reached = _source().reached("kubectl_disagg.commands.rollout_status")
    assert "kubectl_disagg.rollout.git_status" in reached
    assert "kubectl_disagg.views.templating" in reached


def second_spellings(source: Source, spellings: set[str], prefixes: tuple[str, ...]) -> list[str]:
    """Modules other than core/api/naming.py spelling one of `spellings` or a key under `prefixes`."""
    return sorted({source.relative(module) for module in source.paths for node in source.nodes(module)
                   if isinstance(node, ast.Constant) and (node.value in spellings or isinstance(node.value, str)
                                                          and node.value.startswith(prefixes))} - {"core/api/naming.py"})


def test_kinds_and_api_versions_are_spelled_once():
    """Each kind, API group and version, and each label or annotation key, is a constant of
    `core/api/naming.py`; a second spelling elsewhere is how a rename leaves one place behind."""
    from kubectl_disagg.core.api import naming

    spellings = {naming.LWS_KIND, naming.LWS_GROUP, naming.LWS_API_VERSION, naming.SERVICE_KIND,
                 naming.SET_KIND, naming.SET_GROUP, naming.SET_API_VERSION, naming.SCALER_KIND,
                 naming.POLICY_KIND, naming.STATE_KIND, naming.PLUGIN_GROUP, naming.PLUGIN_API_VERSION}
    prefixes = (naming.LABEL_PREFIX, naming.LWS_PREFIX, naming.ARGOCD_PREFIX, "app.kubernetes.io/")  # label keys
    assert second_spellings(_source(), spellings, prefixes) == []


def classes(source: Source, module: str) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in source.tree(module).body if isinstance(node, ast.ClassDef)}


def type_names_defined_twice(source: Source) -> dict[str, list[str]]:
    """A class name is defined in one module only (module-private `_Names` aside): two types
    under one name send a reader to the wrong one."""
    defined: dict[str, list[str]] = {}
    for module in source.paths:
        for name in classes(source, module):
            if not name.startswith("_"):
                defined.setdefault(name, []).append(source.relative(module))
    return {name: paths for name, paths in defined.items() if len(paths) > 1}


def test_each_type_name_means_one_thing():
    assert type_names_defined_twice(_source()) == {}


def test_a_plain_set_renders_without_the_rules_of_states_and_policies():
    """`render -f` of a set with no rollout state and no RolloutPolicy (`render | kubectl apply`,
    the plugin at rest) loads neither the rules a state must keep (design §8: the replay, the
    reconcile pass) nor the policy reader and its PromQL parser: they load where a state or a
    policy is read. Their import is most of render's start-up above its floor (BENCHMARKS.md)."""
    heavy = {"kubectl_disagg.gitops.state", "kubectl_disagg.gitops.render", "kubectl_disagg.gitops.rules",
             "kubectl_disagg.core.controller.reconcile",
             "kubectl_disagg.core.delivery.policy", "kubectl_disagg.core.delivery.analysis", "kubectl_disagg.core.delivery.promql"}
    roots = ("kubectl_disagg.commands.render", "kubectl_disagg.gitops.directory")
    assert loaded(_source(), roots, heavy.__contains__, at_import=True) == []
    assert heavy <= _source().reached("kubectl_disagg.gitops.directory"), "the check above can fail: they are reachable"


def holders(source: Source, names: tuple[str, ...]) -> list[str]:
    """The modules defining a class named one of `names`, once per class."""
    return sorted(module for module in source.paths for name in classes(source, module) if name in names)


def test_the_shared_pipeline_sits_below_gitops():
    """Read → sets → render is `inputs/` (the reader, `inputs.directory`'s loading and steady
    render); `render` imports no module of gitops/ when it is loaded, and `gitops.directory`
    calls the pipeline for the sets with a rollout state rather than holding one of its own."""
    source = _source()
    assert loaded(source, ("kubectl_disagg.commands.render",), lambda m: _layer(m) == "gitops", at_import=True) == []
    assert "kubectl_disagg.inputs.directory" in source.imports("kubectl_disagg.gitops.directory")
    assert holders(source, ("Directory", "SetEntry", "LoadResult")) == ["kubectl_disagg.inputs.directory"] * 2


# The one input reader (issue 38): `inputs/` lists directories and opens the files a command
# reads (manifests, state files, stdin); nothing else does. The cluster client reads its own
# files (kubeconfig, tokens, certificates) and `manifests/crds.py` the CRDs shipped in the package:
# neither is a command's input.
READS_ITS_OWN_FILES = ("kubectl_disagg.inputs", "kubectl_disagg.kube.client", "kubectl_disagg.manifests.crds")
READING_CALLS = {"open", "walk", "listdir", "scandir", "iterdir", "read_bytes", "read_text", "glob", "rglob", "stdin"}


def readers(source: Source) -> dict[str, list[str]]:
    """Only `inputs/` lists a directory or opens an input file: a second walk is a second set of
    rules for dot-files, globs and missing files (manifests/reader and gitops/directory had one
    each, and disagreed)."""
    found: dict[str, list[str]] = {}
    for module in source.paths:
        if any(module == allowed or module.startswith(allowed + ".") for allowed in READS_ITS_OWN_FILES):
            continue
        for node in source.nodes(module):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
                found.setdefault(module, []).append(f"open() at line {node.lineno}")
            elif isinstance(node, ast.Attribute) and node.attr in READING_CALLS - {"open"}:
                if node.attr == "stdin" and not (isinstance(node.value, ast.Name) and node.value.id == "sys"):
                    continue
                found.setdefault(module, []).append(f".{node.attr} at line {node.lineno}")
    return found


def test_one_input_reader():
    assert readers(_source()) == {}


# The one writer of files (issue 47): a temporary file beside the file, renamed over it, the
# file's mode kept and the temporary file removed on any failure. Three writers had each their
# own (the -f edits, the state files and their restore, the kubeconfig's tokens) and the restore
# wrote mode 0600 and could leave its temporary file behind.
ATOMIC_WRITER = "kubectl_disagg.manifests.writer"


def file_writers(source: Source) -> dict[str, list[str]]:
    """The modules other than ATOMIC_WRITER that replace, rename or make a temporary file."""
    writers: dict[str, list[str]] = {}
    for module in source.paths:
        for node in source.nodes(module):
            if isinstance(node, ast.Attribute) and node.attr in ("replace", "rename", "mkstemp", "NamedTemporaryFile") \
                    and isinstance(node.value, ast.Name) and node.value.id in ("os", "tempfile") and module != ATOMIC_WRITER:
                writers.setdefault(module, []).append(f"{node.value.id}.{node.attr} at line {node.lineno}")
    return writers


def test_one_atomic_file_writer():
    assert file_writers(_source()) == {}


def clocks_not_a_clock(source: Source) -> dict[str, list[int]]:
    """A parameter named `clock` is a `kubectl_disagg.clock.Clock` (wall time and monotonic
    seconds, one injected type): it once meant monotonic seconds, a datetime or epoch seconds,
    each a different callable."""
    others: dict[str, list[int]] = {}
    for module in source.paths:
        for node in source.nodes(module):
            if isinstance(node, ast.arg) and node.arg == "clock" and ast.unparse(node.annotation or node) != "Clock":
                others.setdefault(module, []).append(node.lineno)
    return others


_TIME_READS = {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns"}
_CLOCK_IF_BARE = {"gmtime", "localtime", "ctime"}  # the time now when given none


def time_reads(source: Source) -> dict[str, list[str]]:
    """Every read of the time outside `kubectl_disagg.clock`: `time.time`, `time.monotonic` and
    their kin (called, passed or imported), `time.gmtime()` and `time.strftime(FORMAT)` given no
    time, `datetime.now`, `datetime.utcnow`, `date.today`, a `utcnow` of our own, and the
    system clock read where it is not handed in (`SYSTEM_CLOCK.now()`). Time is read from the
    `Clock` a caller hands in, so that a test hands in a fake one."""
    found: dict[str, list[str]] = {}
    for module in source.paths:
        if module == "kubectl_disagg.clock":
            continue
        reads = []
        for node in source.nodes(module):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "time" \
                    and node.attr in _TIME_READS:
                reads.append((node.lineno, ast.unparse(node)))
            elif isinstance(node, ast.Attribute) and node.attr in ("now", "utcnow", "today") \
                    and ast.unparse(node.value).split(".")[-1] in ("datetime", "date"):
                reads.append((node.lineno, ast.unparse(node)))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and ast.unparse(node.func.value) == "time" and (
                        node.func.attr in _CLOCK_IF_BARE and not node.args
                        or node.func.attr == "strftime" and len(node.args) == 1):
                reads.append((node.lineno, ast.unparse(node.func)))
            elif isinstance(node, ast.ImportFrom) and node.module == "time":
                reads.extend((node.lineno, alias.name) for alias in node.names if alias.name in _TIME_READS)
            elif isinstance(node, ast.Call) and (getattr(node.func, "id", getattr(node.func, "attr", None)) in (
                    "utcnow", "_utcnow") or ast.unparse(node.func).startswith("SYSTEM_CLOCK.")):
                reads.append((node.lineno, ast.unparse(node.func)))
        if reads:
            found[module] = [f"{name} at line {line}" for line, name in sorted(reads)]
    return found


def test_a_clock_is_the_one_clock():
    assert clocks_not_a_clock(_source()) == {}
    assert time_reads(_source()) == {}


def callers(source: Source, names: tuple[str, ...]) -> list[str]:
    """The modules calling a function named one of `names` (by name or as an attribute)."""
    return sorted({module for module in source.paths for node in source.nodes(module)
                   if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in names})


def test_inputs_are_loaded_in_one_place():
    """A command's documents become sets in one place, `inputs.directory` (through
    `core.delivery.sets.load_documents`): no second loader beside it in the package (a set read from the
    cluster is loaded by `core.delivery.sets.set_from_object`, one object at a time)."""
    assert callers(_source(), ("load_documents", "load_sets")) == ["kubectl_disagg.core.delivery.sets",
                                                                    "kubectl_disagg.inputs.directory"]


def test_a_rollout_is_decided_in_one_place():
    """The decision's composition (the rollout, its stable revision, the position, `decide`) was
    spelled three times: a pass (waves.admit), the state file (gitops.waves) and the plan
    (rollout.plan), each free to drift. Now `core.delivery.waves.decided` alone composes it."""
    assert callers(_source(), ("the_rollout", "stable_of", "position_for")) == ["kubectl_disagg.core.delivery.waves"]


# The mode is a store, not a fork (issue 38, design §9.8): `rollout/` defines where a position is
# kept (`PositionStore`, with the step's part: `Store`) and runs each verb, the step and the status
# once over it; `gitops/`, git's parts below it (the state file, the writer, the log), never
# reaches back up; one store per mode (git's, rollout/git_run.py, is made of those parts); only
# `commands/` picks a store and hands it to the rollout.
STORE_PROTOCOL = "kubectl_disagg.rollout.store"
STORES = {"ClusterStore": "kubectl_disagg.rollout.store", "GitStore": "kubectl_disagg.rollout.git_run"}



def protocols(source: Source, module: str) -> list[str]:
    """The classes of `module` that are a `Protocol` (a type the stores implement, not a base they share)."""
    return sorted(name for name, node in classes(source, module).items()
                  if any(isinstance(base, ast.Name) and base.id == "Protocol" for base in node.bases))


def reaching_up(source: Source, below: str, above: str) -> list[str]:
    """`module -> target` for each import (at any depth, a function's too, or one for the type
    checker) from layer `below` into layer `above`."""
    return sorted(f"{module} -> {target}" for module in source.in_layer(below)
                  for target in source.imports(module) if _layer(target) == above)


def test_rollout_defines_the_position_store_and_the_git_store_never_reaches_up():
    """The git store sits below the rollout: nothing of gitops/ imports rollout/ (what both
    need, the store's data and the outcome, lives in core/delivery/)."""
    source = _source()
    assert "PositionStore" in protocols(source, STORE_PROTOCOL)
    assert reaching_up(source, "gitops", "rollout") == []


# Each store implements the protocol: the type checker holds it (tests/unit/test_seams.py, run
# by mypy under `make lint`), signatures and all, not a comparison of member names here.


def store_makers(source: Source) -> list[str]:
    """A store is made (called by name) in `commands/` alone: the verbs, the views and the
    libraries take the one they are given."""
    return sorted(f"{module} makes {node.func.id}" for module in source.paths if _layer(module) != "commands"
                  for node in source.nodes(module)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in STORES)


def test_only_commands_pick_a_store():
    assert store_makers(_source()) == []
    assert {"kubectl_disagg.rollout.store", "kubectl_disagg.gitops.store"} <= _source().reached(
        "kubectl_disagg.commands.rollout_verbs")


# The position changes of the verbs (core/delivery/waves.py) and the one module applying them.
VERB_CHANGES = ("promote", "pause", "resume", "abort", "retry")
VERB_CHANGES_FROM = "kubectl_disagg.core.delivery.waves"


def verb_changers(source: Source) -> list[str]:
    """The modules outside core/delivery/waves.py taking a verb's position change from it, by import
    (`from kubectl_disagg.core.delivery.waves import promote`) or by attribute (`waves.promote`)."""
    found = set()
    for module in source.paths:
        if module == VERB_CHANGES_FROM:
            continue
        for node in source.nodes(module):
            if isinstance(node, ast.ImportFrom) and node.module == VERB_CHANGES_FROM and any(
                    alias.name in VERB_CHANGES for alias in node.names):
                found.add(module)
            elif isinstance(node, ast.Attribute) and node.attr in VERB_CHANGES and isinstance(node.value, ast.Name) \
                    and node.value.id == "waves":
                found.add(module)
    return sorted(found)


def test_each_verb_is_written_once():
    """No mode twin of the verbs: one library (`rollout/verbs.py`) applies each verb's change to a
    position, for every store; a second one (say, a `gitops/verbs.py`) would take them too."""
    assert verb_changers(_source()) == ["kubectl_disagg.rollout.verbs"]


def names_used(source: Source, name: str) -> list[str]:
    return sorted(module for module in source.paths
                  if name in {node.id for node in source.nodes(module) if isinstance(node, ast.Name)})


def test_one_pacer_admits_measures_and_admits_again():
    """admit → analyze → re-admit is written once (rollout/pacer.py `pace`), for the cluster's
    stepper and git's step alike: no other module asks which analysis gate is pending."""
    source = _source()
    assert names_used(source, "pending_gate") == ["kubectl_disagg.rollout.analysis", "kubectl_disagg.rollout.pacer"]
    assert "kubectl_disagg.rollout.pacer" in source.imports("kubectl_disagg.rollout.progressive")
    assert "kubectl_disagg.rollout.pacer" in source.imports("kubectl_disagg.rollout.git_step")


# Each rule on a tree planted with one violation beside a module keeping it: the rule, the
# planted modules (path under the package: text) and what the rule must name.
LONG = "\n".join(["x = 1"] * (LONG_MODULE_LINES + 1))
PLANTED = {
    "homeless": (homeless, {"core/a.py": "", "loose.py": ""}, ["kubectl_disagg.loose"]),
    "upward": (upward_imports, {
        "core/a.py": "from kubectl_disagg.errors import E\n",
        "gitops/c.py": "from kubectl_disagg.views.stops import why\n",
        "rollout/d.py": "from kubectl_disagg.views.stops import why\n",
        "kube/b.py": "def f():\n    from kubectl_disagg.rollout.run import step\n",
        "views/stops.py": "", "rollout/run.py": "", "errors.py": ""},
        ["kubectl_disagg.gitops.c -> kubectl_disagg.views.stops", "kubectl_disagg.kube.b -> kubectl_disagg.rollout.run"]),
    "phrased below views": (phrased_below_views_climbing, {
        "views/stops.py": "from kubectl_disagg.core.delivery.waves import Gate\nfrom kubectl_disagg.kube.session import S\n"},
        ["kubectl_disagg.views.stops -> kubectl_disagg.kube.session"]),
    "command line in core": (command_lines_in_core, {
        "core/a.py": '"""Run `kubectl disagg rollout promote` (a docstring)."""\n'
                     'HINT = "pass it with `rollout promote --full`"\nCOUNT = "--"\nNAME = "x"\n'
                     'WATCH = f"`status {NAME} -w` watches it"\nFIELD = "`pause: {}` holds it"\n'
                     'How = Literal["promote", "promote --full"]\n',
        "views/b.py": 'HINT = "`kubectl disagg rollout status` --watch"\n'},
        ["core/a.py:2: `rollout promote --full`", "core/a.py:5: `status {} -w`"]),
    "import cycle": (runtime_import_cycle, {
        "core/a.py": "from kubectl_disagg.core.b import B\n",
        "core/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kubectl_disagg.core.a import A\n"
                     "def f():\n    from kubectl_disagg.core.c import C\n",
        "core/c.py": "import kubectl_disagg.core.a\n"},
        ["kubectl_disagg.core.a -> kubectl_disagg.core.b -> kubectl_disagg.core.c -> kubectl_disagg.core.a"]),
    "core type cycle": (core_import_cycle, {
        "core/api/model.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kubectl_disagg.core.delivery.policy import P\n",
        "core/delivery/policy.py": "from kubectl_disagg.core.api.model import M\nfrom kubectl_disagg.views.stops import S\n",
        "views/stops.py": "from kubectl_disagg.core.delivery.policy import P\n"},
        ["kubectl_disagg.core.api.model -> kubectl_disagg.core.delivery.policy -> kubectl_disagg.core.api.model"]),
    "core order": (core_out_of_order, {
        "core/__init__.py": "", "core/api/__init__.py": "", "core/delivery/__init__.py": "",
        "core/api/model.py": "from kubectl_disagg.core.delivery.policy import P\n",
        "core/delivery/policy.py": "from kubectl_disagg.core.api.model import M\n",
        "core/loose.py": ""},
        ["kubectl_disagg.core.api.model -> kubectl_disagg.core.delivery.policy",
         "kubectl_disagg.core.loose: in no package of core"]),
    "client face": (reaching_into_the_client, {
        "kube/client/__init__.py": "from kubectl_disagg.kube.client import wire\n", "kube/client/wire.py": "",
        "kube/session.py": "from kubectl_disagg.kube.client import Client\n",
        "rollout/run.py": 'LOADER = "kubectl_disagg.kube.client.wire:send"\n'},
        ["kubectl_disagg.rollout.run -> kubectl_disagg.kube.client.wire"]),
    "long module": (long_modules_saying_nothing, {
        "core/a.py": LONG, "core/b.py": '"""About 450 lines on purpose: one table."""\n' + LONG,
        "errors.py": LONG}, [f"core/a.py has {LONG_MODULE_LINES + 1} lines and no word on why"]),
    "view imports kube": (views_importing_kube, {
        "views/a.py": "from kubectl_disagg.core.delivery import waves\n",
        "views/b.py": "def f():\n    import kubectl_disagg.kube.session\n"}, ["kubectl_disagg.views.b"]),
    "fat command": (fat_commands, {"commands/a.py": "x = 1\n" * (COMMAND_LINES - 1), "commands/b.py": "x = 1\n"
                                   * COMMAND_LINES}, [f"commands/b.py has {COMMAND_LINES} lines"]),
    "loaded at import": (lambda source: loaded(source, ("kubectl_disagg.commands.render",),
                                               lambda m: _layer(m) == "kube", at_import=True), {
        "commands/render.py": "from kubectl_disagg.core.controller import render\n"
                              "def f():\n    from kubectl_disagg.kube import later\n",
        "core/controller/render.py": "from kubectl_disagg.kube import session\n", "kube/session.py": "", "kube/later.py": ""},
        ["kubectl_disagg.kube.session"]),
    "loaded when called": (lambda source: loaded(source, ("kubectl_disagg.commands.render",),
                                                 lambda m: _layer(m) == "kube"), {
        "commands/render.py": "from kubectl_disagg.core.controller import render\n",
        "core/controller/render.py": "def f():\n    from kubectl_disagg.kube import later\n", "kube/later.py": "",
        "kube/unused.py": ""},
        ["kubectl_disagg.kube.later"]),
    "second spelling": (lambda source: second_spellings(source, {"LeaderWorkerSet"}, ("disagg.x-k8s.io/",)), {
        "core/api/naming.py": 'LWS_KIND = "LeaderWorkerSet"\nLABEL = "disagg.x-k8s.io/role"\n',
        "views/a.py": "KIND = naming.LWS_KIND\n", "rollout/b.py": 'KEY = "disagg.x-k8s.io/revision"\n'},
        ["rollout/b.py"]),
    "type name twice": (type_names_defined_twice, {
        "core/a.py": "class Plan: ...\nclass _Row: ...\n", "views/b.py": "class _Row: ...\n",
        "rollout/c.py": "class Plan: ...\n"}, {"Plan": ["core/a.py", "rollout/c.py"]}),
    "holders": (lambda source: holders(source, ("Directory",)), {
        "inputs/directory.py": "class Directory: ...\n", "gitops/directory.py": "class Directory: ...\n"},
        ["kubectl_disagg.gitops.directory", "kubectl_disagg.inputs.directory"]),
    "input reader": (readers, {
        "inputs/tree.py": "import os\nos.walk('.')\n", "kube/client/config.py": "open('kubeconfig')\n",
        "gitops/files.py": "def f(path):\n    return path.read_text()\n",
        "views/a.py": "def f(self):\n    return self.stdin\n"}, {"kubectl_disagg.gitops.files": [".read_text at line 2"]}),
    "file writer": (file_writers, {
        "manifests/writer.py": "os.replace(temporary, path)\n", "views/a.py": "text.replace('a', 'b')\n",
        "gitops/files.py": "import os\ndef f(a, b):\n    os.rename(a, b)\n"},
        {"kubectl_disagg.gitops.files": ["os.rename at line 3"]}),
    "clock": (clocks_not_a_clock, {
        "rollout/a.py": "def f(clock: Clock): ...\n", "rollout/b.py": "def f(x, clock=time.monotonic): ...\n"},
        {"kubectl_disagg.rollout.b": [1]}),
    "time read": (time_reads, {
        "clock.py": "import time\ndef monotonic():\n    return time.monotonic()\n",
        "rollout/a.py": "import time\ndef f(clock, moment):\n    time.sleep(1)\n    return clock.now(), time.gmtime(moment)\n",
        "kube/b.py": "import datetime, time\nfrom time import monotonic\nSTART = time.monotonic()\n"
                     "def f(sleep=time.sleep, read=time.time):\n"
                     "    return datetime.datetime.now(datetime.timezone.utc), time.strftime('%Y'), time.gmtime()\n",
        "gitops/c.py": "from kubectl_disagg.rollout.progressive import utcnow\nNOW = utcnow()\n"
                       "def f(clock=SYSTEM_CLOCK):\n    return SYSTEM_CLOCK.monotonic()\n"},
        {"kubectl_disagg.gitops.c": ["utcnow at line 2", "SYSTEM_CLOCK.monotonic at line 4"],
         "kubectl_disagg.kube.b": ["monotonic at line 2", "time.monotonic at line 3", "time.time at line 4",
                                   "datetime.datetime.now at line 5", "time.gmtime at line 5",
                                   "time.strftime at line 5"]}),
    "callers": (lambda source: callers(source, ("load_documents",)), {
        "inputs/directory.py": "sets.load_documents(documents)\n", "gitops/a.py": "load_documents(documents)\n",
        "views/b.py": "load_documents\n"}, ["kubectl_disagg.gitops.a", "kubectl_disagg.inputs.directory"]),
    "store direction": (lambda source: reaching_up(source, "gitops", "rollout"), {
        "rollout/store.py": "from kubectl_disagg.gitops import git\n",
        "gitops/store.py": "def f():\n    from kubectl_disagg.rollout import store\n"},
        ["kubectl_disagg.gitops.store -> kubectl_disagg.rollout"]),
    "store maker": (store_makers, {
        "commands/verbs.py": "store = GitStore(path)\n", "views/a.py": "def f(x): return x.ClusterStore()\n",
        "rollout/verbs.py": "def f(cluster):\n    return ClusterStore(cluster)\n"},
        ["kubectl_disagg.rollout.verbs makes ClusterStore"]),
    "verb twice": (verb_changers, {
        "core/delivery/waves.py": "def promote(): ...\n", "rollout/verbs.py": "from kubectl_disagg.core.delivery.waves import promote\n",
        "gitops/verbs.py": "from kubectl_disagg.core.delivery import waves\ndef f(d):\n    return waves.pause(d)\n",
        "views/a.py": "from kubectl_disagg.core.delivery.waves import Gate\n"},
        ["kubectl_disagg.gitops.verbs", "kubectl_disagg.rollout.verbs"]),
    "protocol": (lambda source: protocols(source, "kubectl_disagg.rollout.store"), {
        "rollout/store.py": "from typing import Protocol\nclass PositionStore(Protocol): ...\n"
                            "class ClusterStore: ...\nclass Loose(Base): ...\n"}, ["PositionStore"]),
    "names used": (lambda source: names_used(source, "pending_gate"), {
        "rollout/pacer.py": "pending_gate(d)\n", "views/a.py": "x.pending_gate\n"}, ["kubectl_disagg.rollout.pacer"]),
}


def plant(root: pathlib.Path, modules: dict[str, str]) -> Source:
    """A package `kubectl_disagg` under `root` holding `modules` (path: text)."""
    package = root / "kubectl_disagg"
    for name, text in modules.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(textwrap.dedent(text))
    return Source(package)


@pytest.mark.parametrize("rule", sorted(PLANTED))
def test_each_rule_finds_its_planted_violation(rule, tmp_path):
    check, modules, named = PLANTED[rule]
    assert check(plant(tmp_path, modules)) == named


def unplanted(tests: ast.Module, planted: dict[str, tuple]) -> list[str]:
    """The rules (module-level functions taking a `Source` first) a test of `tests` applies to
    kubectl_disagg that no entry of `planted` applies to its planted tree (a function named, or
    one a lambda calls)."""
    rules = {node.name for node in tests.body if isinstance(node, ast.FunctionDef) and node.args.args
             and ast.unparse(node.args.args[0].annotation or node.args.args[0]) == "Source"}
    applied = {call.func.id for node in tests.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
               for call in ast.walk(node) if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)}
    covered = {name for check, _, _ in planted.values()
               for name in ({check.__name__} | set(check.__code__.co_names))}
    return sorted(rules & applied - covered)


def test_each_rule_has_a_planted_violation():
    """A rule added without its entry in PLANTED is a rule nobody has seen fail."""
    assert unplanted(ast.parse(pathlib.Path(__file__).read_text()), PLANTED) == []


def test_a_rule_without_a_planted_violation_is_found():
    tests = ast.parse(textwrap.dedent("""
        def seen(source: Source): ...
        def unseen(source: Source): ...
        def helper(tree): ...
        def test_seen():
            assert seen(_source()) == []
        def test_unseen():
            assert unseen(_source()) == [] and helper(1)
        """))
    assert unplanted(tests, {"seen": (lambda source: seen(source), {}, [])}) == ["unseen"]  # noqa: F821
