"""Reading what people type: data sizes, backup windows, compressibility, stream counts.

Sizes are decimal, as tape vendors and the LTO sizing example count them (1 TB = 1,000 GB, and
20 MB/s is 72 GB an hour); ``KiB``/``MiB``/... are accepted for binary sizes. Every refusal is a
:class:`PlanError` whose message names the field, what was typed and what would be accepted.
"""

from __future__ import annotations

import re


class PlanError(ValueError):
    """Input a plan cannot be made from; ``field`` names the input, the message says what to type."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


_SIZE = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?|[-+]?\.\d+)\s*([kmgtp]?)(i?)b\s*$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_WINDOW = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?|[-+]?\.\d+)\s*([a-z]+)\s*$", re.IGNORECASE)
_SECONDS = {
    "s": 1,
    "sec": 1,
    "secs": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "mins": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hrs": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
}
_RATIO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*:\s*1\s*$")


def parse_size(text: str, field: str = "size") -> int:
    """``"20TB"`` -> 20,000,000,000,000 bytes. Refuses zero, negative and malformed sizes."""
    match = _SIZE.match(str(text))
    if match is None:
        raise PlanError(
            field,
            f"{str(text).strip() or 'nothing'!r} is not a size; "
            "type a number and a unit, e.g. 20TB, 500GB, 1GB or 256KB",
        )
    number, prefix, binary = float(match[1]), match[2].lower(), match[3]
    if number <= 0:
        raise PlanError(field, f"{text.strip()!r} must be more than zero")
    size = round(number * float((1024 if binary else 1000) ** _POWERS[prefix]))
    if size < 1:
        raise PlanError(field, f"{text.strip()!r} is less than one byte")
    return size


def parse_window(text: str, field: str = "window") -> float:
    """``"8h"`` -> 28,800 seconds; s, min, h and d are understood."""
    match = _WINDOW.match(str(text))
    unit = match[2].lower() if match else ""
    if match is None or unit not in _SECONDS:
        raise PlanError(
            field,
            f"{str(text).strip() or 'nothing'!r} is not a duration; "
            "type a number and a unit, e.g. 8h, 90min or 1.5d",
        )
    seconds = float(match[1]) * _SECONDS[unit]
    if seconds <= 0:
        raise PlanError(field, f"{text.strip()!r} must be longer than zero")
    return seconds


def parse_ratio(text: str, field: str = "compressibility") -> float:
    """``"2:1"`` -> 2.0. Data cannot compress to more than it was, so N is at least 1."""
    match = _RATIO.match(str(text))
    if match is None:
        raise PlanError(
            field,
            f"{str(text).strip() or 'nothing'!r} is not a ratio; type it as N:1, "
            "e.g. 1:1 (does not compress), 2:1 or 10:1",
        )
    ratio = float(match[1])
    if ratio < 1:
        raise PlanError(field, f"{text.strip()!r} is below 1:1; data never grows by compression here")
    return ratio


def parse_streams(value: int | str, field: str = "streams") -> int:
    """Concurrent backup streams multiplexed onto one drive (1 = no multiplexing)."""
    try:
        streams = int(str(value).strip())
    except ValueError:
        raise PlanError(field, f"{value!r} is not a whole number of streams, e.g. 1 or 4") from None
    if streams < 1:
        raise PlanError(field, f"{streams} must be at least 1 (1 means no multiplexing)")
    return streams


def format_size(size: float) -> str:
    """Bytes as people write them: 2000000000000 -> '2 TB', 1500000000 -> '1.5 GB'."""
    for power, unit in ((5, "PB"), (4, "TB"), (3, "GB"), (2, "MB"), (1, "KB")):
        if size >= 1000**power:
            value = size / 1000**power
            return f"{value:.4g} {unit}" if value < 1000 else f"{value:,.0f} {unit}"
    return f"{size:,.0f} bytes"


def format_window(seconds: float) -> str:
    hours = seconds / 3600
    return f"{hours:g} h" if hours >= 1 else f"{seconds / 60:g} min"


def format_ratio(ratio: float) -> str:
    return f"{ratio:g}:1"
