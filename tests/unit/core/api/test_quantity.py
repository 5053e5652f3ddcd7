"""Quantities as the controller writes them (k8s.io/apimachinery resource.Quantity, v0.36.3).

Every expectation is derived by hand from the Go algorithm (see kubectl_disagg/core/api/quantity.py);
the differential test against Go itself is tests/unit/core/api/test_revision_oracle.py.
"""

from __future__ import annotations

import pytest

from kubectl_disagg.core.api.quantity import QuantityError, canonical, go_float

CANONICAL = {
    # decimal SI: the exponent is the largest multiple of 3 that keeps the mantissa whole
    "1000m": "1",
    "0.5": "500m",
    ".5": "500m",
    "1.5": "1500m",
    "0.0001": "100u",
    "1000": "1k",
    "2000M": "2G",
    "3.0": "3",
    "-1000m": "-1",
    # binary SI: integers of at least 1024 in powers of 1024, else decimal
    "1024Mi": "1Gi",
    "2048Ki": "2Mi",
    "1.5Gi": "1536Mi",
    "0.5Mi": "512Ki",
    "0.5Ki": "512",
    "0.1Ki": "102400m",
    "1023.5Ki": "1048064",
    "-2048Ki": "-2Mi",
    # input already canonical (by Go's test) is written back verbatim, sign and zeros included
    "5Mi": "5Mi",
    "1536Mi": "1536Mi",
    "8Ki": "8Ki",
    "2G": "2G",
    "100m": "100m",
    "1024": "1024",
    "+1": "+1",
    "01": "01",
    "1e3": "1e3",
    "1E3": "1E3",
    "1.": "1.",
    # exponents
    "1000e3": "1e6",
    "12e2": "1200",
    "1.5e-3": "1500e-6",
    "1e1000": "10e999",
    # zero, however spelled
    "0": "0",
    "00": "0",
    "-0": "0",
    "0.000": "0",
    "0Mi": "0",
    # below nano rounds away from zero; binary SI stops at 2^63-1; 10^21 has no SI suffix
    "0.5n": "1n",
    "1e-10": "1e-9",
    "8Ei": "9223372036854775807",
    "1000E": "1",
    "12345678901234567890": "12345678901234567890",
    # surrounding white space is trimmed
    " 1Gi ": "1Gi",
}


@pytest.mark.parametrize(("text", "expected"), CANONICAL.items(), ids=CANONICAL.keys())
def test_canonical(text, expected):
    assert canonical(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1KiB", "1e", "1.2.3", "--1", "1m5", "1e1.5"])
def test_not_a_quantity(text):
    with pytest.raises(QuantityError):
        canonical(text)


NUMBERS = [
    # a YAML number reaches the API server as encoding/json spells the float64 (a list of pairs:
    # as dictionary keys 1 and 1.0 are one key, and the float case never ran)
    (1, "1"),
    (3, "3"),
    (0.5, "500m"),
    (1.0, "1"),
    (0.1, "100m"),
    (2.5e-05, "25u"),  # 0.000025
    (1e-07, "100e-9"),  # 1e-7: exponent form below 1e-6
    (1e20, "100E"),
    (1e21, "1e+21"),  # exponent form from 1e21 on, and canonical as written
]


@pytest.mark.parametrize(("number", "expected"), NUMBERS, ids=[repr(n) for n, _ in NUMBERS])
def test_numbers(number, expected):
    assert canonical(number) == expected


@pytest.mark.parametrize(("number", "expected"), [
    (1.0, "1"), (0.5, "0.5"), (1e-05, "0.00001"), (1e-07, "1e-7"), (1.5e-10, "1.5e-10"),
    (1e20, "100000000000000000000"), (1e21, "1e+21"), (1.5e300, "1.5e+300"), (-2.25, "-2.25"),
    (123456789.125, "123456789.125"),
])
def test_go_float(number, expected):
    assert go_float(number) == expected


@pytest.mark.parametrize("value", [True, None, [], float("nan")])
def test_other_values_are_refused(value):
    with pytest.raises(QuantityError):
        canonical(value)


def test_quantities_of_any_length_never_end_in_a_traceback():
    assert canonical("1" * 5000) == "1" * 5000
    with pytest.raises(QuantityError, match="more than 100,000"):
        canonical("1" * 100_001)
