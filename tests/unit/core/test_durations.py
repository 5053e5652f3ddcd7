"""`durations`: Go-style durations, read from flags and written in messages."""

from __future__ import annotations

import datetime

import pytest

from kubectl_disagg.core.durations import bounded, format_duration, later, parse_duration


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
    ("61m", None, 'Invalid value: "61m": must be at most 1h0m0s'),
    ("9" * 400 + "s", None, 'Invalid value: "' + "9" * 37 + '...": must be at most 1h0m0s'),
    ("0s", None, 'Invalid value: "0s": must be a positive duration such as 30s, 15m or 1h30m'),
    (15, None, "Invalid value: 15: must be a positive duration such as 30s, 15m or 1h30m"),
])
def test_bounded(raw, seconds, why):
    assert bounded(raw, 3600) == (seconds, why)


def test_later_is_the_last_time_there_is_rather_than_an_overflow():
    start = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
    assert later(start, 60) == start + datetime.timedelta(minutes=1)
    assert later(start, 1e15) == datetime.datetime.max.replace(tzinfo=datetime.timezone.utc)
