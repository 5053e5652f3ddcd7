"""Hints repeat how the user invoked us: NAME, -f PATH, -n, --gitops (issue 39)."""

from __future__ import annotations

from kubectl_disagg.views.invocation import GENERIC, Invocation, command_line


def test_the_generic_hint_is_unchanged():
    assert command_line("promote", gitops=True, flags="--full") == "kubectl disagg rollout promote --full --gitops -f DIR"
    assert GENERIC.command("step") == "kubectl disagg rollout step"


def test_the_users_name_and_namespace_are_repeated():
    assert Invocation(name="my-llm", namespace="serving").command("resume") == \
        "kubectl disagg rollout resume my-llm -n serving"


def test_the_users_files_are_repeated_and_quoted():
    invocation = Invocation(files=("apps/llama/", "my set.yaml"), namespace="prod", gitops=True)
    assert invocation.command("promote", "--full") == \
        "kubectl disagg rollout promote --full --gitops -f apps/llama/ -f 'my set.yaml' -n prod"
    assert invocation.command("status", gitops=False) == \
        "kubectl disagg rollout status -f apps/llama/ -f 'my set.yaml' -n prod"
