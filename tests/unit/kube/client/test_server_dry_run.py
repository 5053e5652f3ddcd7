"""`rollout step --dry-run=none|client|server` without a cluster: the flag's parsing, the server
dry run's pass over an in-memory executor that judges writes without storing them, its view
(text and -o json) and its exit code. The requests themselves are tested against a real
kube-apiserver in tests/integration/test_dry_run_server.py."""

from __future__ import annotations


import copy
import json

import pytest

from kubectl_disagg.cli import main
from kubectl_disagg.commands import _options
from kubectl_disagg.commands.rollout_step import step
from kubectl_disagg.commands.root import cli
from kubectl_disagg.core.api import naming
from kubectl_disagg.core.controller.reconcile import Create, Scale, reconcile
from kubectl_disagg.errors import Conflict, UserError
from kubectl_disagg.exits import StepExit
from kubectl_disagg.kube.client.api_errors import api_error, connection_error
from kubectl_disagg.manifests.writer import to_yaml
from kubectl_disagg.rollout.stepper import SERVER, drive
from kubectl_disagg.views.completion import complete
from kubectl_disagg.views.step_report import format_text, refusal_lines, to_document
from tests.fakes import cluster as memory_cluster
from tests.fakes.cluster import MemoryCluster, MemorySession
from tests.support.cli import on
from tests.support.sets import NS, make_set

# --- the flag -----------------------------------------------------------------------------------


def parsed(*args: str) -> dict:
    return step.make_context("step", list(args)).params


@pytest.mark.parametrize(("args", "dry_run", "name"), [
    ((), "none", None),
    (("-f", "ds.yaml", "--dry-run"), "client", None),  # bare: client, as the boolean flag was
    (("--dry-run", "-f", "ds.yaml"), "client", None),
    (("--dry-run", "llm"), "client", "llm"),  # the next word is NAME, not the flag's value
    (("llm", "--dry-run=server"), "server", "llm"),
    (("--dry-run", "server", "llm"), "server", "llm"),
    (("--dry-run=client", "llm"), "client", "llm"),
    (("--dry-run=none", "llm"), "none", "llm"),
    (("--", "--dry-run"), "none", "--dry-run"),
])
def test_dry_run_takes_kubectls_values(args, dry_run, name):
    params = parsed(*args)
    assert (params["dry_run"], params["name"]) == (dry_run, name)


@pytest.mark.parametrize("argv", [
    ["--dry-run=bogus"],
    ["--dry-run=server", "--until-complete"],
    ["--dry-run=server", "--wait-for-lease"],
    ["--dry-run=client", "--until-complete"],
    ["--gitops", "--dry-run=server"],
])
def test_server_dry_run_usage_errors_exit_2(argv, capsys):
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["rollout", "step", "-f", "ds.yaml", "--kubeconfig", "/nonexistent", *argv])
    out, err = capsys.readouterr()
    assert exited.value.code == StepExit.USAGE and out == "" and "Error:" in err


def test_completion_offers_the_values_after_the_equals_sign_only():
    assert complete(cli, ["rollout", "step", "--dry-run="]).candidates == (
        "--dry-run=none", "--dry-run=client", "--dry-run=server")
    flags = complete(cli, ["rollout", "step", "--dry"]).candidates
    assert len(flags) == 1 and flags[0].startswith("--dry-run\t")
    # A bare --dry-run takes no value: the word after it is NAME (or a flag), as the command reads it.
    assert complete(cli, ["rollout", "step", "--dry-run", "--ti"]).candidates[0].startswith("--timeout")


def test_bare_dry_run_leaves_other_words_alone():
    assert _options.bare_dry_run(["--dry-run", "x", "--dry-run"]) == ["--dry-run=client", "x", "--dry-run=client"]
    assert _options.bare_dry_run(["--dry-run", "none", "--", "--dry-run"]) == ["--dry-run", "none", "--", "--dry-run"]


# --- the pass -----------------------------------------------------------------------------------


class JudgingExecutor(MemorySession):
    """The in-memory session judging dry-run writes against a copy of its cluster, so nothing
    is stored: the preconditions as the real executor sends them, plus refusals set per object
    name."""

    def __init__(self, cluster: MemoryCluster):
        super().__init__(cluster)
        self.sent: list[tuple[str, bool]] = []
        self.refuse: dict[str, UserError] = {}

    def execute(self, action, namespace, *, dry_run=False):
        self.sent.append((action.describe(), dry_run))
        if not dry_run:
            return super().execute(action, namespace)
        if action.name in self.refuse:
            raise self.refuse[action.name]
        try:
            copy.deepcopy(self.cluster).execute([action])
        except memory_cluster.Conflict as err:
            raise Conflict(f"{action.kind.lower()}/{action.name} changed since it was read ({err})") from None


def invalid(name: str, field: str, message: str) -> UserError:
    """What RestClient raises for a 422 Invalid answer naming `field`."""
    body = json.dumps({"kind": "Status", "status": "Failure", "code": 422, "reason": "Invalid",
                       "message": f'LeaderWorkerSet.leaderworkerset.x-k8s.io "{name}" is invalid: {field}: {message}',
                       "details": {"name": name, "causes": [{"field": field, "message": message}]}})
    return api_error(f"leaderworkerset/{name}", 422, "Unprocessable Entity", body)


def first_lws(actions) -> Create:
    return next(a for a in actions if isinstance(a, Create) and a.kind == "LeaderWorkerSet")


def test_every_write_is_sent_as_a_dry_run_and_judged_nothing_stored():
    cluster = MemoryCluster(NS)
    ds = make_set({"prefill": 1, "decode": 2})
    executor = JudgingExecutor(cluster)
    lws = first_lws(reconcile(ds, cluster.snapshot("llm")).actions)
    executor.refuse[lws.name] = invalid(lws.name, "spec.leaderWorkerTemplate.size", "Invalid value: 0")

    (checked,) = drive(executor, ds, NS, dry_run=SERVER, max_in_flight=4)
    assert checked.dry_run == SERVER and not checked.done
    planned = [p.action.describe() for p in checked.planned]
    assert sorted(executor.sent) == sorted((text, True) for text in planned)  # every one, each a dry run
    assert executor.leases == 0 and executor.authorized == [len(planned)]  # no Lease; permissions checked
    assert cluster.objects == {}  # nothing stored
    (refused,) = checked.refused_writes
    assert refused.action == lws
    role = ds.role_names.index(lws.object["metadata"]["labels"][naming.ROLE_LABEL])
    line = ds.source.line(("spec", "roles", role, "spec", "leaderWorkerTemplate"))
    assert refusal_lines(checked, refused) == [
        f"ds.yaml:{line}: spec.roles[{role}].spec.leaderWorkerTemplate.size: refused by the API server "
        f"(leaderworkerset/{lws.name}): Invalid value: 0"]

    text = format_text(checked)
    assert text.splitlines()[0] == (f"disaggregatedset/llm in {NS} at revision {ds.revision}: server dry run, "
                                    f"{len(planned)} changes planned, 1 refused by the API server, nothing changed")
    assert f"  - {lws.describe()}: refused by the API server\n    ds.yaml:{line}: spec.roles[{role}]" in text
    assert text.count(": accepted by the API server\n") == len(planned) - 1
    doc = to_document(checked)
    assert (doc["dryRun"], doc["dryRunStrategy"]) == (True, "server")
    actions = doc["slices"][0]["actions"]
    assert [a["verdict"] for a in actions].count("refused") == 1
    (entry,) = [a for a in actions if a["verdict"] == "refused"]
    assert entry["name"] == lws.name and entry["refusal"] == refusal_lines(checked, refused)
    assert "object" in entry  # still the client dry run's view: what the create would make


def test_a_refusal_other_than_an_invalid_object_is_the_errors_own_line():
    cluster = MemoryCluster(NS)
    old = make_set({"prefill": 2, "decode": 1})
    cluster.execute(reconcile(old, cluster.snapshot("llm")).actions)
    cluster.settle()
    executor = JudgingExecutor(cluster)
    new = make_set({"prefill": 3, "decode": 1})
    taken = cluster.snapshot("llm")
    (scale,) = [a for a in reconcile(new, taken).actions if isinstance(a, Scale)]
    cluster.lws()[scale.name]["spec"]["replicas"] = 5  # someone scaled it after the read

    def snapshot(set_name, namespace, *, scalers=False):
        return taken  # the read before that scale

    executor.snapshot = snapshot
    (checked,) = drive(executor, new, NS, dry_run=SERVER)
    (refused,) = checked.refused_writes
    assert refusal_lines(checked, refused) == [f"leaderworkerset/{scale.name} changed since it was read "
                                               f"({scale.name}: spec.replicas changed since it was read); "
                                               "run the step again"]
    assert "dry run" in format_text(checked) and "diff" in to_document(checked)["slices"][0]["actions"][0]


def test_all_accepted_and_nothing_to_do():
    cluster = MemoryCluster(NS)
    ds = make_set({"prefill": 1, "decode": 1})
    executor = JudgingExecutor(cluster)
    (checked,) = drive(executor, ds, NS, dry_run=SERVER)
    assert checked.refused_writes == [] and "all accepted by the API server, nothing changed" in format_text(checked)
    cluster.execute(reconcile(ds, cluster.snapshot("llm")).actions)
    cluster.settle()
    executor = JudgingExecutor(cluster)
    (idle,) = drive(executor, ds, NS, dry_run=SERVER)
    assert executor.sent == [] and executor.authorized == []  # nothing to send, nothing to ask
    assert "server dry run, 0 changes planned, nothing changed" in format_text(idle)


def test_a_write_that_gets_no_answer_ends_the_dry_run_as_an_error():
    executor = JudgingExecutor(MemoryCluster(NS))
    ds = make_set({"prefill": 1, "decode": 1})
    lws = first_lws(reconcile(ds, executor.cluster.snapshot("llm")).actions)
    executor.refuse[lws.name] = connection_error("https://k8s:6443", ConnectionRefusedError())
    with pytest.raises(UserError, match="cannot reach the API server at https://k8s:6443: connection refused"):
        list(drive(executor, ds, NS, dry_run=SERVER))


# --- the command: view and exit code ------------------------------------------------------------


@pytest.fixture
def session():
    return JudgingExecutor(MemoryCluster(NS))


def run_step(session, path, *args: str, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["rollout", "step", "-f", str(path), *args], on(session))
    out, err = capsys.readouterr()
    return exited.value.code, out, err


def write(tmp_path, ds_replicas: dict[str, int]):
    ds = make_set(ds_replicas)
    path = tmp_path / "ds.yaml"
    path.write_text(to_yaml(ds.source.data))
    return ds, path


def test_exit_0_when_every_write_would_be_accepted(session, tmp_path, capsys):
    _, path = write(tmp_path, {"prefill": 1, "decode": 1})
    code, out, err = run_step(session, path, "--dry-run=server", capsys=capsys)
    assert (code, err) == (StepExit.OK, "")
    assert "server dry run, 4 changes planned, all accepted by the API server, nothing changed" in out
    assert session.leases == 0 and session.cluster.objects == {} and session.events == []


def test_exit_1_lists_every_refusal_one_per_action(session, tmp_path, capsys):
    ds, path = write(tmp_path, {"prefill": 1, "decode": 1})
    creates = [a for a in reconcile(ds, session.cluster.snapshot("llm")).actions if a.kind == "LeaderWorkerSet"]
    for lws in creates:
        session.refuse[lws.name] = invalid(lws.name, "spec.leaderWorkerTemplate.size", "Invalid value: 0")
    service = next(a for a in reconcile(ds, session.cluster.snapshot("llm")).actions if a.kind == "Service")
    session.refuse[service.name] = api_error(f"service/{service.name}", 403, "Forbidden", json.dumps(
        {"kind": "Status", "code": 403, "reason": "Forbidden",
         "message": f'services "{service.name}" is forbidden: denied by a policy'}))

    code, out, err = run_step(session, path, "--dry-run=server", capsys=capsys)
    assert code == StepExit.ERROR
    lines = err.splitlines()
    assert len(lines) == 4 and lines[-1] == (f"disaggregatedset/llm in {NS}: the API server would refuse 3 of this "
                                             "pass's 4 writes (server dry run: nothing was changed)")
    assert sorted(lines[:2]) == sorted(
        f"{path}:{ds.source.line(('spec', 'roles', ds.role_names.index(c.object['metadata']['labels'][naming.ROLE_LABEL]), 'spec', 'leaderWorkerTemplate'))}: "
        f"spec.roles[{ds.role_names.index(c.object['metadata']['labels'][naming.ROLE_LABEL])}]"
        f".spec.leaderWorkerTemplate.size: refused by the API server (leaderworkerset/{c.name}): Invalid value: 0"
        for c in creates)
    assert lines[2] == f"service/{service.name}: forbidden: denied by a policy"
    assert "3 refused by the API server, nothing changed" in out

    code, out, err = run_step(session, path, "--dry-run=server", "-o", "json", capsys=capsys)
    assert code == StepExit.ERROR
    doc = json.loads(out)
    verdicts = {a["name"]: a["verdict"] for a in doc["slices"][0]["actions"]}
    assert verdicts == {**{c.name: "refused" for c in creates}, service.name: "refused",
                        **{name: "accepted" for name in verdicts if name not in session.refuse}}
    assert list(verdicts.values()).count("accepted") == 1


def test_client_dry_run_sends_nothing(session, tmp_path, capsys):
    _, path = write(tmp_path, {"prefill": 1, "decode": 1})
    for flag in ("--dry-run", "--dry-run=client"):
        code, out, _ = run_step(session, path, flag, "-o", "json", capsys=capsys)
        doc = json.loads(out)
        assert code == StepExit.OK and (doc["dryRun"], doc["dryRunStrategy"]) == (True, "client")
        assert "verdict" not in doc["slices"][0]["actions"][0]
    assert session.sent == [] and session.authorized == []
