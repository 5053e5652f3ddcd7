"""`kubectl disagg <TAB>` through the real kubectl (>= 1.26 asks kubectl_complete-disagg on PATH).

Needs only the kubectl binary of the local control plane, not a running one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from testenv.controlplane import ensure_binaries

PLUGIN_BIN = Path(sys.executable).parent  # kubectl-disagg and kubectl_complete-disagg
BASH_COMPLETION = Path("/usr/share/bash-completion/bash_completion")


@pytest.fixture(scope="module")
def env():
    return {"PATH": f"{PLUGIN_BIN}:{ensure_binaries()}:/usr/bin:/bin", "HOME": "/nonexistent"}


def kubectl_complete(env, *words: str) -> list[str]:
    result = subprocess.run(["kubectl", "__complete", "disagg", *words], env=env,
                            capture_output=True, text=True, timeout=60, check=True)
    return result.stdout.splitlines()


def test_subcommands_through_kubectl(env):
    lines = kubectl_complete(env, "")
    assert [line.split("\t")[0] for line in lines[:-1]] == ["cmp", "completion", "crds", "handover", "render", "rollout", "set", "validate", "version"]
    assert lines[-1] == ":4"


def test_flags_and_values_through_kubectl(env):
    assert "--until-complete" in [line.split("\t")[0] for line in kubectl_complete(env, "rollout", "step", "--u")]
    assert kubectl_complete(env, "render", "-o", "") == ["yaml", "json", ":4"]
    assert kubectl_complete(env, "render", "-f", "") == ["yaml", "yml", "json", ":8"]


def test_set_names_through_kubectl(env):
    from tests.support.paths import EXAMPLES

    lines = kubectl_complete(env, "rollout", "status", "-f", str(EXAMPLES / "percent-rollout.yaml"), "")
    assert lines == ["mixtral\tDisaggregatedSet", ":4"]


def test_tab_in_bash_through_kubectls_own_completion_script(env):
    # What a user gets from `source <(kubectl completion bash)` and `kubectl disagg rollout <TAB>`.
    # kubectl's script relies on the bash-completion package; a two-line stand-in where it is absent.
    setup = (f"source {BASH_COMPLETION}" if BASH_COMPLETION.is_file() else
             '_get_comp_words_by_ref() { cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"; '
             'words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }')
    program = f"""{setup}
source <(kubectl completion bash)
COMP_WORDS=(kubectl disagg rollout ""); COMP_CWORD=3; COMP_LINE="kubectl disagg rollout "; COMP_POINT=${{#COMP_LINE}}
__start_kubectl kubectl "" rollout 2>/dev/null
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    out = subprocess.run(["bash", "-c", program], env=env, capture_output=True, text=True, timeout=60).stdout
    assert out.split() == ["abort", "dashboard", "history", "pause", "plan", "promote", "restart", "resume", "retry", "state", "status", "step", "undo"]
