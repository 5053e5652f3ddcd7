"""The tests under this directory need no control plane. Those whose work is another program's
(a Go oracle, the Argo CD harness, controller-gen, pip, mypy, pytest, a hack/ script in bash,
a browser, git against a bare remote)
carry the ``programs`` marker: `make test` runs them as a tier of their own, after the unit tier
(`hack/test_tiers.py`), so the unit tier is the package run in-process."""

from __future__ import annotations

import re

import pytest

from tests.support.paths import REPO

# Test modules (whole), or single tests (`module::name`, each of its parameters), that spend
# their time in other processes: building (pip, the zipapp, controller-gen, mypy) or asking an
# oracle (the Go tools of hack/, Argo CD's code in its harness, a browser), or running a script.
PROGRAMS = (
    "tests/unit/argocd/test_harness.py",
    "tests/unit/argocd/test_health.py",
    "tests/unit/argocd/test_sidecar.py",
    "tests/unit/core/api/test_revision_oracle.py",
    "tests/unit/dashboard/test_browser.py",
    "tests/unit/gitops/test_directory.py::test_every_reader_reads_a_generated_tree_alike",
    "tests/unit/gitops/test_executor.py::test_state_executor_is_a_pass_executor_to_the_type_checker",
    "tests/unit/gitops/test_plan_commits.py::test_the_plans_commit_count_is_what_the_git_rollout_commits",
    "tests/unit/manifests/test_crds.py::test_generated_from_the_go_types_and_current",
    "tests/unit/manifests/test_yaml_oracle.py",
    "tests/unit/rollout/test_git_drive.py",
    "tests/unit/rollout/test_git_drive_shipped.py",
    "tests/unit/test_packaging.py",
    "tests/unit/test_prereqs.py",
    "tests/unit/test_test_tiers.py",
    "tests/unit/test_testenv_errors.py",
    "tests/unit/test_zipapp.py",
    "tests/unit/views/test_mermaid_browser.py",
)


for _entry in PROGRAMS:  # a module renamed, or a test, would fall back into the unit tier unnoticed
    _path, _, _name = _entry.partition("::")
    assert (REPO / _path).is_file() and (not _name or re.search(rf"^def {_name}\(", (REPO / _path).read_text(), re.M)), (
        f"tests/unit/conftest.py PROGRAMS names {_entry}, which is not there")


def runs_programs(nodeid: str) -> bool:
    test = nodeid.split("[", 1)[0]
    return any(test == entry or test.startswith(entry + "::") for entry in PROGRAMS)


def pytest_collection_modifyitems(items):
    for item in items:
        if runs_programs(item.nodeid):
            item.add_marker(pytest.mark.programs)
