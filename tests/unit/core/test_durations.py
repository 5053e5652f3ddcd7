"""`durations`: Go-style durations, read from flags and written in messages."""

from __future__ import annotations

import pytest

from kubectl_disagg.core.durations import format_duration, parse_duration


@pytest.mark.parametrize(("seconds", "text"), [(3, "3s"), (1.5, "1.5s"), (0.25, "0.25s"), (60, "1m0s"),
                                               (1800, "30m0s"), (3900, "1h5m0s")])
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
