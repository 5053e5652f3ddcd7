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
    """Go's spelling of a duration, as kubectl prints it: 1h5m0s, 30m0s, 45s, 1.5s."""
    if seconds < 60:
        return f"{seconds:g}s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes}m{secs}s" if hours else f"{minutes}m{secs}s"
