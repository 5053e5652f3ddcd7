"""The rollout driver's shipped automation (issue 49): its image (the Dockerfile's `driver`
target), the script it runs, the GitHub Actions workflow (checked by actionlint) and the
CronJob with the least RBAC (read the set's objects, no write: the driver writes to git only).
The CronJob and its RBAC are applied to a real API server with --dry-run=server by
tests/integration/test_git_drive.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tests.oracles.actionlint import actionlint
from tests.support.paths import REPO

DRIVER = REPO / "deploy" / "driver"


def stages() -> dict[str, list[tuple[str, str]]]:
    """The Dockerfile's stages by name (the unnamed last one: ""), each (INSTRUCTION, arguments)."""
    text = "\n".join(line for line in (REPO / "Dockerfile").read_text().splitlines() if not line.lstrip().startswith("#"))
    found: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] = []
    for line in text.replace("\\\n", " ").splitlines():
        if not line.strip():
            continue
        op, args = line.split(None, 1)
        if op == "FROM":
            current = found.setdefault(args.split(" AS ")[1] if " AS " in args else "", [])
        current.append((op, args))
    return found


def test_the_workflow_passes_actionlint():
    run = subprocess.run([str(actionlint()), str(DRIVER / "github-workflow.yaml")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_workflow_runs_on_a_schedule_and_on_merges_and_treats_a_decision_as_done():
    workflow = yaml.safe_load((DRIVER / "github-workflow.yaml").read_text())
    on = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert on["schedule"] and on["push"]["branches"] == ["main"]
    assert workflow["permissions"] == {"contents": "write", "pull-requests": "write"}
    (script,) = [step["run"] for step in workflow["jobs"]["drive"]["steps"] if "--push origin" in step.get("run", "")]
    assert "--on-decision" in script and '"$code" -eq 7' in script


def test_the_image_runs_the_driver_script_as_a_non_root_user_with_git():
    driver = stages()["driver"]
    assert any(op == "RUN" and "install" in args and " git " in args for op, args in driver)
    assert ("COPY", "deploy/driver/drive.sh /usr/local/bin/drive.sh") in driver
    assert ("USER", "999:999") in driver and ("ENTRYPOINT", '["/usr/local/bin/drive.sh"]') in driver
    assert "!deploy/driver/drive.sh" in (REPO / ".dockerignore").read_text().splitlines()
    assert stages()[""][-1] == ("ENTRYPOINT", '["/var/run/argocd/argocd-cmp-server"]')  # still the default target


def test_the_cronjob_reads_the_cluster_only_and_takes_git_credentials_from_a_secret():
    (cronjob,) = yaml.safe_load_all((DRIVER / "cronjob.yaml").read_text())
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["/usr/local/bin/drive.sh"]
    env = {e["name"]: e for e in container["env"]}
    assert env["GIT_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "kubectl-disagg-git", "key": "token"}
    assert {"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"} <= set(env)
    rbac = list(yaml.safe_load_all((REPO / "deploy" / "rbac.yaml").read_text()))
    bound = next(d for d in rbac if d["kind"] == "RoleBinding"
                 and d["subjects"] == [{"kind": "ServiceAccount", "name": pod["serviceAccountName"],
                                        "namespace": cronjob["metadata"]["namespace"]}])
    role = next(d for d in rbac if d["kind"] == "Role" and d["metadata"]["name"] == bound["roleRef"]["name"])
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} <= {"get", "list", "watch"}  # no write


def fake_driver(directory: Path, code: int) -> Path:
    """A kubectl-disagg that records its arguments (one a line) and its working tree, and exits `code`."""
    (directory / "kubectl-disagg").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" > "$RECORD"\ngit rev-parse --show-toplevel >> "$RECORD"\nexit {code}\n')
    (directory / "kubectl-disagg").chmod(0o755)
    return directory


def test_the_script_clones_the_branch_and_runs_the_driver_with_the_flags_as_a_shell_splits_them(tmp_path):
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    seed = tmp_path / "seed"
    subprocess.run(["git", "clone", "-q", str(bare), str(seed)], check=True, capture_output=True)
    (seed / "README").write_text("x\n")
    for argv in (["add", "README"], ["-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", "x"],
                 ["push", "-q", "origin", "main"]):
        subprocess.run(["git", "-C", str(seed), *argv], check=True, capture_output=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for code, expected in ((7, 0), (4, 4)):
        fake_driver(bin_dir, code)
        env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "RECORD": str(tmp_path / "args"),
               "REPO_URL": str(bare), "APP_DIR": "apps/llama", "TMPDIR": str(tmp_path),
               "DRIVER_FLAGS": "-q --on-decision 'gh pr create --head \"$DISAGG_DECISION_BRANCH\" --fill'"}
        run = subprocess.run([str(DRIVER / "drive.sh")], env=env, capture_output=True, text=True)
        assert run.returncode == expected, run.stderr
        *args, top = (tmp_path / "args").read_text().splitlines()
        assert args == ["rollout", "step", "--gitops", "-f", "apps/llama", "--push", "origin", "-q", "--on-decision",
                        'gh pr create --head "$DISAGG_DECISION_BRANCH" --fill']
        assert (Path(top) / "README").exists() and Path(top).parent == tmp_path  # a fresh clone of REPO_URL
