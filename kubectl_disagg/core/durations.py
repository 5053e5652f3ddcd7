"""Durations as kubectl spells them: 30s, 5m, 1h30m, or plain seconds."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def parse_duration(text: str) -> float:
    """Seconds in `text`; raises ValueError with a message fit for people."""
    text = text.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    parts = _PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f'invalid duration "{text}": use e.g. 30s, 5m, 1h30m')
    return sum(float(number) * _SECONDS[unit] for number, unit in parts)


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
