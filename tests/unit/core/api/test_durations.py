"""`durations`: Go-style durations read from flags, and written in messages as people write them."""

from __future__ import annotations

import datetime
import re

import pytest
from hypothesis import given, strategies as st

from kubectl_disagg.core.api.durations import bounded, format_duration, later, parse_duration


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


def test_durations_take_ascii_digits_only():
    """Issue 37 item 17b: "1\u0661m" (an Arabic-Indic one) read as 11 minutes."""
    for bad in ("1\u0661m", "\u0661m", "\uff15s", "\u0665"):
        with pytest.raises(ValueError, match="invalid duration"):
            parse_duration(bad)


@pytest.mark.parametrize("text", ["876000000h", "9" * 400 + "s", "9" * 400, "2562048h"])
def test_a_duration_past_gos_longest_is_refused_not_infinite(text):
    """Issue 37 item 8: 400 nines read as float infinity, and a soak past year 9999."""
    with pytest.raises(ValueError, match="longer than the longest duration kubectl reads"):
        parse_duration(text)
    assert parse_duration("2562047h") == 2562047 * 3600


@pytest.mark.parametrize(("raw", "seconds", "why"), [
    ("15m", 900, None), ("1h", 3600, None),
    ("61m", None, 'Invalid value: "61m": must be at most 1h'),
    ("9" * 400 + "s", None, 'Invalid value: "' + "9" * 37 + '...": must be at most 1h'),
    ("0s", None, 'Invalid value: "0s": must be a positive duration such as 30s, 15m or 1h30m'),
    (15, None, "Invalid value: 15: must be a positive duration such as 30s, 15m or 1h30m"),
])
def test_bounded(raw, seconds, why):
    assert bounded(raw, 3600) == (seconds, why)


def test_later_is_the_last_time_there_is_rather_than_an_overflow():
    start = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
    assert later(start, 60) == start + datetime.timedelta(minutes=1)
    assert later(start, 1e15) == datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)
@given(st.floats(min_value=0, max_value=10 * 86400, allow_nan=False))
def test_a_shown_duration_reads_back_as_itself_rounded(seconds):
    """What a message shows is what a person would write, and a flag would read: within the
    rounding (a millisecond below 1 s, a tenth below 10 s, a second above)."""
    text = format_duration(seconds)
    assert re.fullmatch(r"(\d+h)?(\d+m)?(\d+(\.\d)?s)?|\d+ms", text) and text
    rounding = 0.0005 if seconds < 1 else 0.05 if seconds < 10 else 0.5
    assert abs(parse_duration(text) - seconds) <= rounding + 1e-9


def test_later_rounds_up_to_the_second_a_position_records():
    """Found by the property test of progressive rollouts: a soak of 500ms ended, written to the
    second, at the very second its wave completed, so it passed at once."""
    start = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)
    assert later(start, 0.5) == start + datetime.timedelta(seconds=1)
    assert later(start, 1.5) == start + datetime.timedelta(seconds=2)
    assert later(start, 2) == start + datetime.timedelta(seconds=2)
