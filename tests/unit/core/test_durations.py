"""`durations`: Go-style durations read from flags, and written in messages as people write them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from kubectl_disagg.core.durations import format_duration, parse_duration


@pytest.mark.parametrize(("seconds", "text"), [(3, "3s"), (1.5, "1.5s"), (0.25, "250ms"), (60, "1m"),
                                               (1800, "30m"), (3900, "1h5m"), (90, "1m30s"), (3601, "1h1s"),
                                               (4.98355, "5s"), (59.6, "1m"), (0, "0s"), (0.0004, "0s"),
                                               (0.9996, "1s"), (9.96, "10s"), (-1, "0s")])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_durations():
    assert parse_duration("30s") == 30 and parse_duration("5m") == 300 and parse_duration("1h30m") == 5400
    assert parse_duration("45") == 45
    for bad in ("5x", "m", "1h 2m", ""):
        try:
            parse_duration(bad)
        except ValueError as err:
            assert "invalid duration" in str(err)
        else:
            raise AssertionError(bad)


@given(st.floats(min_value=0, max_value=10 * 86400, allow_nan=False))
def test_a_shown_duration_reads_back_as_itself_rounded(seconds):
    """What a message shows is what a person would write, and a flag would read: within the
    rounding (a millisecond below 1 s, a tenth below 10 s, a second above)."""
    text = format_duration(seconds)
    assert re.fullmatch(r"(\d+h)?(\d+m)?(\d+(\.\d)?s)?|\d+ms", text) and text
    rounding = 0.0005 if seconds < 1 else 0.05 if seconds < 10 else 0.5
    assert abs(parse_duration(text) - seconds) <= rounding + 1e-9
