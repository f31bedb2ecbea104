"""Exact parsing and formatting of rates, sizes, times and percentages."""

import pytest

from fabricsim.units import (
    format_percent,
    format_rate,
    format_size,
    format_time,
    parse_percent,
    parse_rate,
    parse_size,
    parse_time,
)

G = 10**9


@pytest.mark.parametrize(
    "text, bps",
    [
        ("100Gbps", 100 * G),
        ("100G", 100 * G),
        ("100g", 100 * G),
        ("2.5Gbps", 2_500_000_000),
        ("10Mbps", 10_000_000),
        ("10mbps", 10_000_000),
        ("10M", 10_000_000),
        ("1Tbps", 10**12),
        ("1.6T", 1_600_000_000_000),
        ("400Kbps", 400_000),
        ("400kbps", 400_000),
        ("400K", 400_000),
        ("64bps", 64),
        (" 25 Gbps ", 25 * G),
        ("1e9", G),
        ("1.5e3Mbps", 1_500_000_000),
        ("5000000000", 5 * G),
        (5_000_000_000, 5 * G),
        (2.5e9, 2_500_000_000),
        ("0.1Gbps", 100_000_000),
        ("2.675Gbps", 2_675_000_000),
        ("0", 0),
    ],
)
def test_parse_rate(text, bps):
    assert parse_rate(text) == bps
    assert isinstance(parse_rate(text), int)


@pytest.mark.parametrize(
    "text, size",
    [
        ("32MB", 32_000_000),
        ("32MiB", 32 * 2**20),
        ("1500B", 1500),
        ("256KB", 256_000),
        ("256kB", 256_000),
        ("9KiB", 9216),
        ("1.5GB", 1_500_000_000),
        ("2GiB", 2 * 2**30),
        ("1TB", 10**12),
        ("1TiB", 2**40),
        ("0.5KiB", 512),
        (1500, 1500),
        ("1500", 1500),
        ("0B", 0),
    ],
)
def test_parse_size(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize(
    "text, ps",
    [
        ("1ps", 1),
        ("500ns", 500_000),
        ("1us", 1_000_000),
        ("1µs", 1_000_000),
        ("1μs", 1_000_000),
        ("1.2us", 1_200_000),
        ("10ms", 10_000_000_000),
        ("2s", 2_000_000_000_000),
        ("0.3s", 300_000_000_000),
        ("1.1ms", 1_100_000_000),
        ("0.1ns", 100),
        ("0", 0),
        (0, 0),
        ("0s", 0),
        ("0ns", 0),
    ],
)
def test_parse_time(text, ps):
    assert parse_time(text) == ps


def test_decimal_inputs_are_exact_where_floats_are_not():
    # Binary floating point gets these wrong: 4.35 * 1e12 == 4349999999999.9995.
    assert int(4.35 * 1e12) != 4_350_000_000_000
    assert parse_time("4.35s") == 4_350_000_000_000
    assert int(1.005 * 1e3) != 1005
    assert parse_time("1.005ns") == 1005
    assert parse_time("1.2us") == 1_200_000
    assert parse_rate("2.3Gbps") == 2_300_000_000
    assert parse_size("1.1MB") == 1_100_000
    # Many significant digits survive.
    assert parse_time("1.000000000001s") == 1_000_000_000_001


@pytest.mark.parametrize(
    "parse, text, expected",
    [
        (parse_time, "0.5ps", 1),  # halves round away from zero
        (parse_time, "0.4ps", 0),
        (parse_time, "1.5ps", 2),
        (parse_rate, "2.5bps", 3),
        (parse_size, "1.1KiB", 1126),  # 1126.4
        (parse_size, "1.5B", 2),
    ],
)
def test_values_between_integers_round_to_nearest(parse, text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize(
    "text, fraction",
    [("20%", 0.2), ("12.5%", 0.125), ("100%", 1.0), ("0%", 0.0), ("33.3 %", 0.333), ("0.1%", 0.001)],
)
def test_parse_percent(text, fraction):
    assert parse_percent(text) == fraction


@pytest.mark.parametrize(
    "parse, value, message",
    [
        (parse_rate, "fast", "expected a data rate like '100Gbps'"),
        (parse_rate, "10GBps", "unknown unit 'GBps'"),
        (parse_rate, "10 Gbit", "unknown unit 'Gbit'"),
        (parse_rate, "-5Gbps", "must not be negative (got '-5Gbps')"),
        (parse_rate, -5, "must not be negative"),
        (parse_rate, "", "expected a data rate"),
        (parse_rate, None, "expected a data rate"),
        (parse_rate, True, "expected a data rate"),
        (parse_rate, [1], "expected a data rate"),
        (parse_rate, float("nan"), "expected a data rate"),
        (parse_rate, "1e30Tbps", "too large"),
        (parse_rate, "1e99999999", "too large"),
        (parse_size, "10Mb", "unknown unit 'Mb'"),
        (parse_size, "1 0B", "expected a size like '1500B'"),
        (parse_size, "-1KB", "must not be negative"),
        (parse_time, "10", "a unit is required"),
        (parse_time, 10, "a unit is required"),
        (parse_time, "5 minutes", "unknown unit 'minutes'"),
        (parse_time, "1h", "expected a time like '10us'"),
        (parse_time, "-1us", "must not be negative"),
        (parse_time, float("inf"), "expected a time"),
        (parse_percent, "20", "expected a percentage like '20%'"),
        (parse_percent, 0.2, "expected a percentage"),
        (parse_percent, "abc%", "expected a percentage"),
        (parse_percent, "-5%", "must not be negative"),
    ],
)
def test_bad_values_give_clear_errors(parse, value, message):
    with pytest.raises(ValueError) as info:
        parse(value)
    assert message in str(info.value)


def test_units_are_listed_in_errors():
    with pytest.raises(ValueError) as info:
        parse_rate("3 furlongs")
    assert "Gbps" in str(info.value) and "'3 furlongs'" in str(info.value)


@pytest.mark.parametrize(
    "fmt, value, text",
    [
        (format_rate, 2_500_000_000, "2.5Gbps"),
        (format_rate, 100 * G, "100Gbps"),
        (format_rate, 400_000, "400Kbps"),
        (format_rate, 1, "1bps"),
        (format_time, 1_200_000, "1.2us"),
        (format_time, 10_000_000_000, "10ms"),
        (format_time, 0, "0s"),
        (format_time, 1, "1ps"),
        (format_time, 1_000_000_000_001, "1.000000000001s"),
        (format_size, 1_000_000, "1MB"),
        (format_size, 32 * 2**20, "32MiB"),
        (format_size, 1500, "1500B"),
        (format_size, 9216, "9KiB"),
        (format_size, 0, "0B"),
        (format_percent, 0.2, "20%"),
        (format_percent, 0.125, "12.5%"),
    ],
)
def test_format(fmt, value, text):
    assert fmt(value) == text


def test_format_time_rounds_for_display_only_when_asked():
    assert format_time(1_234_567, 2) == "1.23us"
    assert format_time(1_234_567) == "1.234567us"


@pytest.mark.parametrize("value", [0, 1, 7, 999, 1000, 1001, 1024, 1500, 123_456_789, 10**12 + 1, 2**64 - 1])
def test_format_then_parse_is_identity(value):
    assert parse_rate(format_rate(value)) == value
    assert parse_time(format_time(value)) == value
    assert parse_size(format_size(value)) == value


@pytest.mark.parametrize("text", ["20%", "12.5%", "33.3%", "0.1%", "100%"])
def test_percent_round_trip(text):
    assert format_percent(parse_percent(text)) == text


def test_power_and_energy_parse_exactly_and_round_trip():
    from fabricsim.units import format_energy, format_power, parse_energy, parse_power

    assert parse_power("120W") == 120_000_000 and parse_power("4.5W") == 4_500_000
    assert parse_power("750mW") == 750_000 and parse_power("1.2kW") == 1_200_000_000 and parse_power(0) == 0
    assert parse_energy("50pJ") == 50_000 and parse_energy("2.5nJ") == 2_500_000 and parse_energy("1uJ") == 10**9
    for text in ("120W", "4.5W", "250mW", "1.2kW", "3uW"):
        assert format_power(parse_power(text)) == text
    for text in ("50pJ", "2.5nJ", "7fJ", "1J"):
        assert format_energy(parse_energy(text)) == text
    for bad, message in (("5", "a unit is required"), ("5pW", "unknown unit 'pW'"), ("-1W", "negative")):
        with pytest.raises(ValueError, match=message):
            parse_energy(bad) if bad.endswith("pW") else parse_power(bad)
