"""Kubernetes resource quantities as the controller writes them: `canonical("1024Mi") == "1Gi"`.

A transcription of k8s.io/apimachinery's `resource.ParseQuantity` and `Quantity.MarshalJSON`
(v0.36.3), quirks included, because the revision hashes the controller's bytes:

- a string already in canonical form is written back verbatim (`"+1"`, `"01"`, `"5Mi"`);
- otherwise the value is written as mantissa and suffix of its format's family: binary SI
  (`Ki` … `Ei`, integers ≥ 1024 only, else decimal), decimal SI (`n` … `E`) or `eN` exponents,
  with the exponent the largest multiple of 3 that keeps the mantissa an integer;
- precision beyond nano is rounded away from zero; binary SI is capped at 2^63-1;
- a decimal exponent with no suffix (`1000E` = 10^21) is written without one, as Go does.
"""

from __future__ import annotations

import sys

DECIMAL_EXPONENT, BINARY_SI, DECIMAL_SI = "DecimalExponent", "BinarySI", "DecimalSI"

_DECIMAL = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_BY_EXPONENT = {exponent: suffix for suffix, exponent in _BINARY.items()}
_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_MAX_INT64 = (1 << 63) - 1
_NANO = -9
_MAX_DIGITS = 18  # maxInt64Factors: digits that always fit an int64
# strings.TrimSpace: ASCII whitespace, NEL, NBSP and Unicode category Z.
_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


class QuantityError(ValueError):
    """Not a quantity Go would parse."""


def canonical(value: object) -> str:
    """The string the controller marshals for a quantity given as YAML/JSON string or number
    (anything else raises QuantityError)."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = go_float(value)
    elif isinstance(value, str):
        text = value.strip(_GO_SPACE)
    else:
        raise QuantityError(f"{value!r} is not a quantity")
    if len(text) <= _PYTHON_INT_DIGITS:
        return _parse_and_format(text)
    # Go's inf.Dec has no limit on digits, Python's int-from-text has one (4,300): lifted here for
    # this one parse, up to a length whose arithmetic stays quick; longer ones are refused (ours).
    if len(text) > MAX_QUANTITY_LENGTH:
        raise QuantityError(f"a quantity of {len(text):,} characters is more than {MAX_QUANTITY_LENGTH:,}")
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return _parse_and_format(text)
    finally:
        sys.set_int_max_str_digits(limit)


_PYTHON_INT_DIGITS = 4000
MAX_QUANTITY_LENGTH = 100_000


def go_float(value: float) -> str:
    """encoding/json's spelling of a float64 (how a YAML number reaches the API server)."""
    if value != value or value in (float("inf"), float("-inf")):
        raise QuantityError(f"{value!r} is not a quantity")
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    magnitude = abs(value)
    if 1e-6 <= magnitude < 1e21:
        digits, exponent = _shortest_digits(value)
        return _positional(value < 0, digits, exponent)
    digits, exponent = _shortest_digits(value)
    # digits d1 d2 … as d1.d2…e±XX with the exponent at least two digits, `e-07` as `e-7`
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    power = exponent + len(digits) - 1
    text = f"{'-' if value < 0 else ''}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if power < 0 and abs(power) < 10:
        text = text.replace("e-0", "e-")
    return text


def _shortest_digits(value: float) -> tuple[str, int]:
    """The shortest round-tripping decimal digits (as Go's -1 precision) and their exponent."""
    text = repr(abs(value))
    mantissa, _, exp = text.partition("e")
    exponent = int(exp) if exp else 0
    whole, _, fraction = mantissa.partition(".")
    fraction = fraction.rstrip("0") if fraction != "0" else ""
    digits = (whole + fraction).lstrip("0") or "0"
    exponent -= len(fraction)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    return stripped or "0", exponent


def _positional(negative: bool, digits: str, exponent: int) -> str:
    if exponent >= 0:
        text = digits + "0" * exponent
    elif -exponent >= len(digits):
        text = "0." + "0" * (-exponent - len(digits)) + digits
    else:
        text = digits[:exponent] + "." + digits[exponent:]
    return ("-" if negative else "") + text


# --- ParseQuantity --------------------------------------------------------------------------

def _split(text: str) -> tuple[bool, str, str, str, str]:
    """parseQuantityString: sign, the numeric text (with sign), numerator, denominator, suffix."""
    positive = True
    pos, end = 0, len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    while True:  # leading zeros
        if pos >= end:
            return positive, "0", "0", "", ""
        if text[pos] != "0":
            break
        pos += 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos]
    if pos >= end:
        return positive, text, num, "", ""
    num = num or "0"
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(f"quantity {text!r} has an unknown suffix")
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """Suffix → (base, exponent, format)."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], DECIMAL_SI
    if suffix in _BINARY:
        return 2, _BINARY[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if not body or not set(body) <= _DIGITS:
            raise QuantityError(f"quantity suffix {suffix!r} is not valid")
        parsed = int(digits)
        if not -(1 << 63) <= parsed <= _MAX_INT64:
            raise QuantityError(f"quantity suffix {suffix!r} is out of range")
        return 10, (parsed + (1 << 31)) % (1 << 32) - (1 << 31), DECIMAL_EXPONENT  # int32(parsed)
    raise QuantityError(f"quantity suffix {suffix!r} is not valid")


def _parse_and_format(text: str) -> str:
    if not text:
        raise QuantityError("an empty string is not a quantity")
    if text == "0":
        return "0"
    positive, value, num, denom, suffix = _split(text)
    base, exponent, form = _interpret(suffix)

    mantissa = 1
    if form == BINARY_SI:
        scale = 0
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - exponent * 3 // 10 - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = _MAX_DIGITS - (len(num) + len(denom))

    if precision >= 0:
        scale -= len(denom)
        if scale >= _NANO:
            shifted = num + denom
            number = int(shifted)
            result = number * mantissa
            if result <= _MAX_INT64:
                if form == BINARY_SI:
                    if exponent % 10 == 0 and number & 0x07:
                        return text  # already canonical: Go keeps the input string
                elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
                    return text
                return _format(result if positive else -result, scale, form)

    # inf.Dec path: arbitrary precision, rounded up to nano.
    unscaled, dec_scale = _decimal(value)
    if base == 10:
        dec_scale -= exponent
    else:
        unscaled <<= exponent
    negative = unscaled < 0
    unscaled = abs(unscaled)
    if unscaled:
        unscaled, dec_scale = _round_up_to_nano(unscaled, dec_scale)
    if form == BINARY_SI and _greater_than(unscaled, dec_scale, _MAX_INT64):
        unscaled, dec_scale = _MAX_INT64, 0
    if form == BINARY_SI and unscaled and _less_than_one(unscaled, dec_scale):
        form = DECIMAL_SI
    return _format(-unscaled if negative else unscaled, -dec_scale, form)


def _decimal(value: str) -> tuple[int, int]:
    """inf.Dec.SetString: optional sign, digits with at most one point → (unscaled, scale)."""
    sign = 1
    if value[:1] in ("+", "-"):
        sign = -1 if value[0] == "-" else 1
        value = value[1:]
    whole, point, fraction = value.partition(".")
    digits = whole + fraction
    if not digits or not set(digits) <= _DIGITS:
        raise QuantityError(f"quantity {value!r} has no number")
    return sign * int(digits), len(fraction) if point else 0


def _round_up_to_nano(unscaled: int, scale: int) -> tuple[int, int]:
    """inf.Dec.Round(9, RoundUp) of a positive value: away from zero, to exactly 9 decimals."""
    if scale > 9:
        drop = scale - 9
        if drop > len(str(unscaled)):
            return 1, 9
        quotient, remainder = divmod(unscaled, 10 ** drop)
        return quotient + (1 if remainder else 0), 9
    return unscaled * 10 ** (9 - scale), 9


def _greater_than(unscaled: int, scale: int, bound: int) -> bool:
    return bool(unscaled > bound * 10 ** scale if scale >= 0 else unscaled * 10 ** -scale > bound)


def _less_than_one(unscaled: int, scale: int) -> bool:
    return scale > 0 and unscaled < 10 ** scale


# --- CanonicalizeBytes ----------------------------------------------------------------------

def _format(mantissa: int, exponent: int, form: str) -> str:
    """The canonical spelling of mantissa × 10^exponent in `form`."""
    if mantissa == 0:
        return "0"
    if form == BINARY_SI:
        integer = _as_integer(mantissa, exponent)
        if integer is None or -1024 < integer < 1024:
            form = DECIMAL_SI
        else:
            magnitude, times = abs(integer), 0
            while magnitude >= 1024 and magnitude % 1024 == 0:
                magnitude //= 1024
                times += 1
            signed = -magnitude if integer < 0 else magnitude
            return str(signed) + _BINARY_BY_EXPONENT.get(times * 10, "")
    negative = mantissa < 0
    magnitude = abs(mantissa)
    while magnitude >= 10 and magnitude % 10 == 0:
        magnitude //= 10
        exponent += 1
    while exponent % 3:
        magnitude *= 10
        exponent -= 1
    number = ("-" if negative else "") + str(magnitude)
    if form == DECIMAL_SI:
        return number + _DECIMAL_BY_EXPONENT.get(exponent, "")
    return number if exponent == 0 else f"{number}e{exponent}"


def _power_of_ten(exponent: int) -> int:
    """10 ** exponent for exponent >= 0, typed as the int it is (int ** int is typed Any)."""
    power: int = 10 ** exponent
    return power


def _as_integer(mantissa: int, exponent: int) -> int | None:
    """The value as an integer when it is one (binary SI is only used for integers)."""
    if exponent >= 0:
        return mantissa * _power_of_ten(exponent) if exponent < 40 else None  # binary SI is below 2^63
    quotient, remainder = divmod(abs(mantissa), _power_of_ten(-exponent))
    if remainder:
        return None
    return -quotient if mantissa < 0 else quotient
