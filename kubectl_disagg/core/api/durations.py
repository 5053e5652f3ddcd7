"""Durations as kubectl spells them: 30s, 5m, 1h30m, or plain seconds.

Digits are ASCII only (as Go's time.ParseDuration reads them: "1\u0661m" is no duration), and a
duration is at most Go's longest (MAX_SECONDS, int64 nanoseconds), so every one is a finite
number of seconds; each field bounds its own further (`bounded`).
"""

from __future__ import annotations

import datetime
import math
import re

_NUMBER = r"[0-9]+(?:\.[0-9]+)?"  # never \d: it matches every script's digits
_PART = re.compile(rf"({_NUMBER})(ms|s|m|h)")
_PARTS = re.compile(rf"{_NUMBER}|(?:{_NUMBER}(?:ms|s|m|h))+")  # a duration, whatever its length
_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
MAX_SECONDS = 9223372036.854775807  # Go's time.Duration maximum: 2562047h47m16.854775807s


def parse_duration(text: str) -> float:
    """Seconds in `text`; raises ValueError with a message fit for people."""
    text = text.strip()
    if re.fullmatch(_NUMBER, text):
        seconds = float(text)
    else:
        parts = _PART.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            raise ValueError(f'invalid duration "{_shown(text)}": use e.g. 30s, 5m, 1h30m')
        seconds = sum(float(number) * _SECONDS[unit] for number, unit in parts)
    if not seconds <= MAX_SECONDS:  # a run of nines reads as infinity
        raise ValueError(f'invalid duration "{_shown(text)}": longer than the longest duration kubectl reads '
                         f"({format_duration(math.floor(MAX_SECONDS))})")
    return seconds


def format_duration(seconds: float) -> str:
    """A duration as people write it, and as `parse_duration` reads it back: 250ms, 5s, 1.5s,
    1m30s, 15m, 1h5m. Below 10 s to a tenth of a second (below 1 s to the millisecond), above it
    to the second; units that are zero are left out."""
    seconds = max(0.0, seconds)
    if seconds < 1:
        millis = round(seconds * 1000)
        return "0s" if millis == 0 else ("1s" if millis == 1000 else f"{millis}ms")
    if seconds < 10:
        tenths = round(seconds, 1)
        return f"{tenths:g}s"
    hours, rest = divmod(round(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n)


def _shown(text: str) -> str:
    """`text` as a message quotes it: at most 40 characters."""
    return text if len(text) <= 40 else text[:37] + "..."


def bounded(raw: object, most: float) -> tuple[float | None, str | None]:
    """The seconds of a duration field (`raw` as written), positive and at most `most`, or None
    and why not, as the API server words it: what every duration of a policy is checked with."""
    try:
        seconds = parse_duration(raw) if isinstance(raw, str) else None
    except ValueError:
        seconds = math.inf if isinstance(raw, str) and _PARTS.fullmatch(raw.strip()) else None
    shown = f'"{_shown(raw)}"' if isinstance(raw, str) else repr(raw)
    if seconds is None or seconds <= 0:
        return None, f"Invalid value: {shown}: must be a positive duration such as 30s, 15m or 1h30m"
    if seconds > most:
        return None, f"Invalid value: {shown}: must be at most {format_duration(most)}"
    return seconds, None


def later(moment: datetime.datetime, seconds: float) -> datetime.datetime:
    """`moment` plus `seconds`, rounded up to a whole second (positions record times to the
    second: a soak of 500ms written as the second it started in would pass at once), the last
    representable time when that is beyond it (a timedelta past year 9999 would raise
    OverflowError)."""
    try:
        end = moment + datetime.timedelta(seconds=seconds)
        return end if end.microsecond == 0 else end.replace(microsecond=0) + datetime.timedelta(seconds=1)
    except OverflowError:
        return datetime.datetime.max.replace(tzinfo=moment.tzinfo)
