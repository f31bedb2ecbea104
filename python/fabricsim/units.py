"""Exact parsing and formatting of the quantities used in scenarios.

Scenarios are written with units (``"100Gbps"``, ``"1.2us"``, ``"32MiB"``);
the simulation core only sees integers: bit/s, picoseconds and bytes.
Parsing goes through :class:`decimal.Decimal`, so decimal inputs convert
exactly (``"1.2us"`` is exactly 1_200_000 ps, ``"2.5Gbps"`` exactly
2_500_000_000 bit/s) with none of the rounding errors of binary floats.

A value that is not a whole number of base units (``"0.5ps"``, ``"1.5B"``)
is rounded to the nearest integer, halves away from zero. Every other value
is converted exactly. Negative values and values of 2**64 or more (the
core's integer range) are rejected.

The ``format_*`` functions are the inverse of the parsers:
``parse_x(format_x(n)) == n`` for every valid ``n``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Callable, Union

__all__ = [
    "Quantity",
    "format_energy",
    "format_percent",
    "format_power",
    "format_rate",
    "format_size",
    "format_time",
    "parse_energy",
    "parse_percent",
    "parse_power",
    "parse_rate",
    "parse_size",
    "parse_time",
    "parse_time_fs",
]

Quantity = Union[str, int, float]
"""What the parsers accept: a string with a unit, or a bare number."""

_MAX = 2**64 - 1
_NUMBER = re.compile(r"^(?P<sign>[+-]?)(?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>\S*)$")
_PREFIXES = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}

_RATE_UNITS = (("Tbps", 10**12), ("Gbps", 10**9), ("Mbps", 10**6), ("Kbps", 10**3), ("bps", 1))
_TIME_UNITS = (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3), ("ps", 1))
_SIZE_UNITS = (
    ("TiB", 2**40),
    ("TB", 10**12),
    ("GiB", 2**30),
    ("GB", 10**9),
    ("MiB", 2**20),
    ("MB", 10**6),
    ("KiB", 2**10),
    ("KB", 10**3),
    ("B", 1),
)
_SIZE_FACTORS = {**dict(_SIZE_UNITS), "kB": 10**3, "": 1}
_POWER_UNITS = (("kW", 10**9), ("W", 10**6), ("mW", 10**3), ("uW", 1))
_POWER_FACTORS = {**dict(_POWER_UNITS), "µW": 1, "μW": 1}
_ENERGY_UNITS = (("J", 10**15), ("mJ", 10**12), ("uJ", 10**9), ("nJ", 10**6), ("pJ", 10**3), ("fJ", 1))
_ENERGY_FACTORS = {**dict(_ENERGY_UNITS), "µJ": 10**9, "μJ": 10**9}
_TIME_FACTORS = {**dict(_TIME_UNITS), "µs": 10**6, "μs": 10**6}


@dataclass(frozen=True)
class _Dimension:
    """How to read one kind of quantity."""

    description: str  # e.g. "a data rate like '100Gbps'"
    units_help: str
    unit_factor: Callable[[str], int | None]  # unit text -> multiplier, None if unknown
    base_unit: str


def _rate_factor(unit: str) -> int | None:
    if unit.endswith("bps"):
        return _PREFIXES.get(unit[:-3].lower())
    if unit.endswith(("Bps", "B/s")):
        return None
    return _PREFIXES.get(unit.lower())


_RATE = _Dimension(
    "a data rate like '100Gbps'",
    "units: bps, Kbps, Mbps, Gbps, Tbps or K, M, G, T; a bare number is bit/s",
    _rate_factor,
    "bit/s",
)
_SIZE = _Dimension(
    "a size like '1500B', '256KB' or '32MiB'",
    "units: B, KB, MB, GB, TB or KiB, MiB, GiB, TiB; a bare number is bytes",
    _SIZE_FACTORS.get,
    "bytes",
)
_TIME = _Dimension(
    "a time like '10us'",
    "units: ps, ns, us, ms, s; only 0 may omit the unit",
    _TIME_FACTORS.get,
    "ps",
)


_POWER = _Dimension(
    "a power like '120W'",
    "units: kW, W, mW, uW; only 0 may omit the unit",
    _POWER_FACTORS.get,
    "uW",
)
_ENERGY = _Dimension(
    "an energy like '50pJ'",
    "units: J, mJ, uJ, nJ, pJ, fJ; only 0 may omit the unit",
    _ENERGY_FACTORS.get,
    "fJ",
)


def _split(value: Quantity, what: _Dimension) -> tuple[Decimal, str]:
    """Split ``value`` into a non-negative decimal number and its unit text."""
    expected = f"expected {what.description}"
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{expected}, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{expected}, got {value!r}")
    # repr() of a float is its shortest round-tripping decimal form: 0.1 -> "0.1".
    text = str(value).strip() if not isinstance(value, float) else repr(value)
    match = _NUMBER.match(text)
    if match is None:
        raise ValueError(f"{expected} ({what.units_help}), got {value!r}")
    number = Decimal(match["number"])
    if match["sign"] == "-" and number != 0:
        raise ValueError(f"must not be negative (got {value!r})")
    return number, match["unit"]


def _to_int(number: Decimal, factor: int, original: Quantity, what: _Dimension) -> int:
    too_large = f"too large (at most 2**64 - 1 {what.base_unit}), got {original!r}"
    if number.adjusted() > 40:
        raise ValueError(too_large)
    with localcontext() as context:
        context.prec = 200
        scaled = (number * factor).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    if scaled > _MAX:
        raise ValueError(too_large)
    return int(scaled)


def _parse(value: Quantity, what: _Dimension) -> int:
    number, unit = _split(value, what)
    if unit == "" and what in (_TIME, _POWER, _ENERGY):
        if number == 0:
            return 0
        raise ValueError(f"expected {what.description}: a unit is required ({what.units_help}), got {value!r}")
    factor = what.unit_factor(unit)
    if factor is None:
        raise ValueError(f"expected {what.description}: unknown unit {unit!r} ({what.units_help}), got {value!r}")
    return _to_int(number, factor, value, what)


def parse_rate(value: Quantity) -> int:
    """Parse a data rate into bit/s.

    Accepts ``"100Gbps"``, ``"100G"``, ``"2.5Gbps"``, ``"10Mbps"``,
    ``"400Kbps"``, ``"1Tbps"`` (prefix letters are case-insensitive, all
    prefixes are powers of 1000) and bare numbers, which are bit/s.
    Byte rates (``"GBps"``) are rejected to avoid a factor-8 mistake.
    Fractional bit/s are rounded to the nearest integer.
    """
    return _parse(value, _RATE)


def parse_size(value: Quantity) -> int:
    """Parse a size into bytes.

    ``"32MB"`` is 32 * 10**6, ``"32MiB"`` is 32 * 2**20; also ``"1500B"``,
    ``"256KB"`` (or ``"kB"``), ``"9KiB"``, ``"1.5GB"``; bare numbers are
    bytes. Fractional bytes are rounded to the nearest integer.
    """
    return _parse(value, _SIZE)


def parse_time(value: Quantity) -> int:
    """Parse a time into picoseconds.

    Accepts ``"1ps"``, ``"500ns"``, ``"1.2us"`` (or ``"µs"``), ``"10ms"``,
    ``"2s"``; a number without unit is only accepted when it is zero.
    Fractions of a picosecond are rounded to the nearest integer.
    """
    return _parse(value, _TIME)


def parse_power(value: Quantity) -> int:
    """Parse a power into microwatts: ``"120W"``, ``"4.5W"``, ``"750mW"``, ``"1.2kW"``.

    A number without unit is only accepted when it is zero.
    """
    return _parse(value, _POWER)


def parse_energy(value: Quantity) -> int:
    """Parse an energy into femtojoules: ``"50pJ"``, ``"2.5nJ"``, ``"1uJ"``.

    A number without unit is only accepted when it is zero.
    """
    return _parse(value, _ENERGY)
def parse_time_fs(value: Quantity) -> int:
    """Parse a (small) time into femtoseconds, for costs per byte: ``"0.342ns"`` is 342,000 fs."""
    number, unit = _split(value, _TIME)
    if unit == "" and number != 0:
        raise ValueError(f"expected {_TIME.description}: a unit is required ({_TIME.units_help}), got {value!r}")
    factor = _TIME_FACTORS.get(unit, None) if unit else 1
    if factor is None:
        raise ValueError(f"expected {_TIME.description}: unknown unit {unit!r} ({_TIME.units_help}), got {value!r}")
    return _to_int(number, factor * 1000, value, _TIME)


def parse_percent(value: Quantity) -> float:
    """Parse a percentage such as ``"20%"`` into a fraction (0.2).

    The fraction is computed exactly in decimal and then converted to the
    nearest float.
    """
    expected = "expected a percentage like '20%'"
    if not isinstance(value, str) or not value.strip().endswith("%"):
        raise ValueError(f"{expected}, got {value!r}")
    number_text = value.strip()[:-1].strip()
    match = _NUMBER.match(number_text)
    if match is None or match["unit"]:
        raise ValueError(f"{expected}, got {value!r}")
    number = Decimal(match["number"])
    if match["sign"] == "-" and number != 0:
        raise ValueError(f"must not be negative (got {value!r})")
    return float(number / 100)


def _plain(number: Decimal) -> str:
    """Decimal without exponent or trailing zeros: 2.50 -> '2.5', 1E+1 -> '10'."""
    text = format(number, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _format_decimal(value: int, units: tuple[tuple[str, int], ...], digits: int | None) -> str:
    """Format with the largest unit not above ``value``, exactly or to ``digits`` decimals."""
    if value < 0:
        raise ValueError(f"must not be negative (got {value!r})")
    name, factor = next(((n, f) for n, f in units if value >= f), units[-1])
    number = Decimal(value) / Decimal(factor)
    if digits is not None:
        number = number.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return f"{_plain(number)}{name}"


def format_rate(bps: int) -> str:
    """Format bit/s exactly with the largest fitting unit: 2_500_000_000 -> '2.5Gbps'."""
    return _format_decimal(bps, _RATE_UNITS, None)


def format_time(ps: int, digits: int | None = None) -> str:
    """Format picoseconds with the largest fitting unit: 1_200_000 -> '1.2us'.

    Exact by default; with ``digits`` the number is rounded to that many
    decimals, for display only (``format_time(1_234_567, 2) == '1.23us'``).
    """
    if ps == 0:
        return "0s"
    return _format_decimal(ps, _TIME_UNITS, digits)


def format_size(size: int) -> str:
    """Format bytes exactly, as a whole number of the largest unit that divides it.

    1_000_000 -> '1MB', 33_554_432 -> '32MiB', 1500 -> '1500B'.
    """
    if size < 0:
        raise ValueError(f"must not be negative (got {size!r})")
    if size == 0:
        return "0B"
    name, factor = next((n, f) for n, f in _SIZE_UNITS if size % f == 0)
    return f"{size // factor}{name}"


def format_power(uw: int) -> str:
    """Format microwatts exactly with the largest fitting unit: 4_500_000 -> '4.5W'."""
    return "0W" if uw == 0 else _format_decimal(uw, _POWER_UNITS, None)


def format_energy(fj: int) -> str:
    """Format femtojoules exactly with the largest fitting unit: 50_000 -> '50pJ'."""
    return "0J" if fj == 0 else _format_decimal(fj, _ENERGY_UNITS, None)


def format_percent(fraction: float) -> str:
    """Format a fraction as a percentage: 0.2 -> '20%'."""
    return f"{_plain(Decimal(repr(fraction)) * 100)}%"
