"""docs/reference/fields.md is the one hack/field_reference.py makes from config/crd."""

from __future__ import annotations

from tests.support.hack_modules import hack_module


def test_the_committed_field_reference_is_current():
    generator = hack_module("field_reference.py")
    assert generator.TARGET.read_text() == generator.reference(), \
        "docs/reference/fields.md is stale: run `make docs`"


def test_every_kind_and_the_waves_are_described():
    text = hack_module("field_reference.py").reference()
    for kind in ("DisaggregatedSet", "DisaggregatedSetRoleScaler", "RolloutPolicy", "RolloutState"):
        assert f"## {kind}\n" in text
    (waves,) = [line for line in text.splitlines() if line.startswith("| `spec.waves` |")]
    assert "cumulative" in waves
