"""`rollout status --gitops -w`: the directory read once, each look reading the live cluster only."""

from __future__ import annotations

import shutil

import pytest

from tests.fakes.cluster import MemorySession
from tests.support.cli import on
from tests.support.paths import EXAMPLES


def test_issue38_status_gitops_watch_reads_the_directory_once(tmp_path, monkeypatch, capsys):
    """Every look of `rollout status --gitops -w` was taken from a new read and load of the
    directory (read_tree and gitops.directory.load at each look); now the inputs are read once
    and the directory loaded once for the whole watch, and each look asks the cluster only."""
    from kubectl_disagg.cli import main
    from kubectl_disagg.gitops import directory as directories
    from kubectl_disagg.inputs import tree as inputs

    shutil.copy(EXAMPLES / "prefill-decode.yaml", tmp_path / "ds.yaml")
    session = MemorySession()
    watched = []

    def wait_for_change(set_name, namespace, resource_version, timeout, kind="LeaderWorkerSet"):
        watched.append(set_name)
        return len(watched) <= 3  # three changes seen (three more looks), then quiet until the deadline

    session.wait_for_change = wait_for_change
    reads, loads = [], []
    real_read, real_load = inputs.read_tree, directories.load
    monkeypatch.setattr(inputs, "read_tree", lambda *a, **k: reads.append(a) or real_read(*a, **k))
    monkeypatch.setattr(directories, "load", lambda *a, **k: loads.append(k.get("states", True)) or real_load(*a, **k))
    with pytest.raises(SystemExit) as exited:
        main(["rollout", "status", "--gitops", "-f", str(tmp_path), "-w", "--timeout", "1s"], on(session))
    assert exited.value.code == 4, capsys.readouterr()  # the next action never changed: timed out
    assert len(watched) >= 4  # four looks at least
    assert len(reads) == 1 and loads.count(True) == 1  # the directory: read once, loaded (with its states) once


def test_issue47_item16_step_and_status_take_no_revision_services_as_render_does(tmp_path, capsys):
    """Issue 47 item 16: a set applied from `render --no-revision-services` never read complete
    (the next pass would create its `-prv` Services), and `rollout step` created them. Both take
    the option now, as render does, and the set's annotation carries it for every command."""
    from kubectl_disagg.cli import main
    from kubectl_disagg.core.api import naming
    from kubectl_disagg.core.controller.render import render_set, without_revision_services
    from kubectl_disagg.core.delivery.sets import load_sets
    from kubectl_disagg.manifests.reader import parse_stream
    from kubectl_disagg.inputs import directory
    from kubectl_disagg.inputs import tree as inputs

    path = tmp_path / "ds.yaml"
    shutil.copy(EXAMPLES / "prefill-decode.yaml", path)
    session = MemorySession()
    objects, _ = directory.render_steady(inputs.read_tree([str(path)], inputs.Reading()), inputs.Reading(), None)
    for obj in without_revision_services(objects):
        session.cluster.add(obj)
    session.cluster.settle()

    def run(*argv):
        with pytest.raises(SystemExit) as exited:
            main(list(argv), on(session))
        return exited.value.code, capsys.readouterr()

    assert run("rollout", "status", "-f", str(path), "--for=complete")[0] == 3  # it would create them
    code, out = run("rollout", "status", "-f", str(path), "--for=complete", "--no-revision-services")
    assert code == 0 and "Available, complete" in out.out
    code, out = run("rollout", "step", "-f", str(path), "--no-revision-services")
    assert code == 0 and not [name for kind, name in session.cluster.objects if kind == naming.SERVICE_KIND]
    annotated = path.read_text().replace("  namespace: serving\n", "  namespace: serving\n  annotations:\n"
                                         f"    {naming.REVISION_SERVICES_ANNOTATION}: \"false\"\n", 1)
    path.write_text(annotated)
    assert run("rollout", "status", "-f", str(path), "--for=complete")[0] == 0  # the annotation says it
    (ds,) = load_sets(parse_stream(annotated, str(path)))
    assert [o["kind"] for o in render_set(ds, "serving")] == ["LeaderWorkerSet", "LeaderWorkerSet"]
def test_issue47_wide_is_the_status_with_what_each_slice_waits_for_and_its_next_actions(tmp_path, capsys):
    """`-o wide` was refused (exit 2); as kubectl's, it is the text with more columns."""
    from kubectl_disagg.cli import main

    shutil.copy(EXAMPLES / "prefill-decode.yaml", tmp_path / "ds.yaml")
    outputs = {}
    for output in ("text", "wide"):
        with pytest.raises(SystemExit) as exited:
            main(["rollout", "status", "-f", str(tmp_path / "ds.yaml"), "-o", output], on(MemorySession(watches=False)))
        outputs[output] = capsys.readouterr().out
        assert exited.value.code == 3, outputs[output]  # nothing deployed: not Available
    header = next(line for line in outputs["wide"].splitlines() if line.lstrip().startswith("SLICE"))
    assert header.split()[-4:] == ["WAITING", "FOR", "NEXT", "ACTIONS"]
    row = outputs["wide"].splitlines()[outputs["wide"].splitlines().index(header) + 1]
    assert row.split()[-1].isdigit() and int(row.split()[-1]) > 0  # the actions a step would take
    assert len(outputs["wide"].splitlines()) == len(outputs["text"].splitlines())


def test_status_watch_in_yaml_is_one_stream_a_program_reads(tmp_path, capsys):
    """`rollout status -w -o yaml` wrote each look's document after the last with no `---`
    between them: one document with every key repeated, which YAML readers take as the last look
    only (or refuse). Each look that changed is now a document of one stream, as the git mode's
    were; a look the same as the last is not written again."""
    import yaml

    from kubectl_disagg.cli import main
    from kubectl_disagg.core.delivery.sets import load_sets
    from kubectl_disagg.manifests.reader import parse_stream
    from kubectl_disagg.rollout import run
    from kubectl_disagg.rollout.store import ClusterStore
    from tests.fakes.printer import Printer

    path = tmp_path / "ds.yaml"
    shutil.copy(EXAMPLES / "prefill-decode.yaml", path)
    (ds,) = load_sets(parse_stream(path.read_text(), str(path)))
    session = MemorySession()
    looks = []

    def one_pass_a_watch(set_name, namespace, resource_version, timeout, kind="LeaderWorkerSet"):
        looks.append(set_name)
        session.cluster.settle()
        run.step(ClusterStore(session, [ds]), Printer())
        return True

    session.wait_for_change = one_pass_a_watch
    with pytest.raises(SystemExit) as exited:
        main(["rollout", "status", "-f", str(path), "-w", "-o", "yaml", "--timeout", "30s"], on(session))
    out = capsys.readouterr().out
    assert exited.value.code == 0, out
    documents = list(yaml.safe_load_all(out))
    assert len(looks) >= 2 and 2 <= len(documents) <= len(looks) + 1  # a document per look that changed
    assert all(document["kind"] == "DisaggregatedSet" for document in documents)
    assert documents[-1]["complete"] is not None and documents[0] != documents[-1]
