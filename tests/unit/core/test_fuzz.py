"""A short, seeded run of the fuzz campaign (tests/support/fuzzing.py). `make fuzz` runs the long one:
KUBECTL_DISAGG_FUZZ_EXAMPLES inputs per strategy, figures in docs/reliability.md."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests.support.fuzzing import (
    EXAMPLES_PER_STRATEGY, FIGURES, check_input, check_policy_input, mutated_bytes, mutated_documents,
    mutated_templates, policy_documents,
)

CAMPAIGN = settings(max_examples=EXAMPLES_PER_STRATEGY, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


@CAMPAIGN
@given(mutated_bytes())
def test_mutated_bytes_end_in_a_render_or_our_error(data):
    with tempfile.TemporaryDirectory() as directory:
        check_input(data, Path(directory))


@CAMPAIGN
@given(mutated_documents())
def test_mutated_documents_end_in_a_render_or_our_error(data):
    with tempfile.TemporaryDirectory() as directory:
        check_input(data, Path(directory))


@CAMPAIGN
@given(mutated_templates())
def test_mutated_templates_end_in_a_render_or_our_error(data):
    with tempfile.TemporaryDirectory() as directory:
        check_input(data, Path(directory))


@CAMPAIGN
@given(policy_documents())
def test_rollout_policies_end_in_acceptance_or_our_error(data):
    """Issue 37: a RolloutPolicy of any apiVersion, durations, counts, checks and waves through
    validate, render and rollout plan: FILE:LINE or acceptance, and an accepted one's waves end."""
    with tempfile.TemporaryDirectory() as directory:
        check_policy_input(data, Path(directory))


def test_the_campaign_ran():
    """Printed with -s (make fuzz): how many inputs, and how they ended."""
    print("\nfuzz figures:", dict(sorted(FIGURES.items())))
    assert FIGURES["inputs"] >= 3 * EXAMPLES_PER_STRATEGY or FIGURES["inputs"] == 0
    assert FIGURES["policy inputs"] >= EXAMPLES_PER_STRATEGY or FIGURES["policy inputs"] == 0
