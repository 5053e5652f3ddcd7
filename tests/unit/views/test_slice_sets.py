"""Issue 47: an abort at 100 slices listed 89 slice numbers one by one. Every printer of a set of
slices writes runs as ranges (`slices 11-99`, `slices 0, 2-4, 7`), the same words everywhere."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_disagg.core.api import naming
from kubectl_disagg.views import stops, verbs

# The printers left: the plan, the events and the lost-position record had their own (one by
# one past a run) and now call naming.slices_words.
PRINTERS = {
    "core.api.naming.slices_words": naming.slices_words,
    "views.stops.slices_words": stops.slices_words,
    "views.verbs.slice_list": verbs.slice_list,
}


@pytest.mark.parametrize("printer", PRINTERS.values(), ids=list(PRINTERS))
def test_an_abort_at_100_slices_names_its_slices_as_a_range(printer):
    assert printer(list(range(11, 100))) == "slices 11-99"
    assert printer([0, 2, 3, 4, 7]) == "slices 0, 2-4, 7"
    assert printer([5]) == "slice 5"


@settings(max_examples=100, deadline=None)
@given(st.sets(st.integers(0, 120), min_size=1))
def test_every_printer_says_the_same(slices):
    ordered = sorted(slices)
    words = {name: printer(ordered) for name, printer in PRINTERS.items()}
    assert len(set(words.values())) == 1, words
    assert len(words["core.api.naming.slices_words"]) <= 8 + 9 * (1 + len(slices) - sum(
        1 for s in slices if s - 1 in slices))
