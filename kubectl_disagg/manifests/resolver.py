"""What a YAML scalar means to kubectl: go-yaml v2's resolver and sigs.k8s.io/yaml's JSON rules.

kubectl, the API server and Argo CD read YAML with `sigs.k8s.io/yaml` (v1.6.0) over
`go.yaml.in/yaml/v2` (v2.4.3): go-yaml decodes each document into Go values, and
`yaml.YAMLToJSON` turns those into JSON. This module is that reading for one scalar, written
after go-yaml's `resolve.go` (`resolve`, `parseTimestamp`) and sigs.k8s.io/yaml's `yaml.go`
(`convertToJSONableObject`); `reader` applies it to every scalar of a document and
`writer` quotes every string that it would not read back as that string. It is pure
and imports nothing of PyYAML. tests/unit/manifests/test_yaml_oracle.py holds it to the Go code.

Where kubectl differs from PyYAML (YAML 1.1 as written): `1:30` is a string, not base 60;
`1e3`, `0o17`, `08` and `09` are numbers; `y`, `Y`, `n`, `N` are booleans; an integer too large
for 64 bits is a float, or a string when it is too large even for that.
"""

from __future__ import annotations

import math
import re
import struct
from datetime import date
from decimal import Decimal

STR, NULL, BOOL, INT, FLOAT, TIMESTAMP, BINARY, MERGE = (
    "tag:yaml.org,2002:" + name for name in ("str", "null", "bool", "int", "float", "timestamp", "binary", "merge"))
_RESOLVABLE = frozenset(("", STR, BOOL, INT, FLOAT, NULL, TIMESTAMP))
# A resolved scalar: the text (a string, a timestamp's, an unknown tag's), a number, a boolean, null.
Scalar = str | int | float | bool | None

# resolve.go's resolveMap: words read as they are, whatever the tag asks.
_WORDS: dict[str, tuple[str, Scalar]] = {}
for _words, _item in (("y Y yes Yes YES true True TRUE on On ON", (BOOL, True)),
                      ("n N no No NO false False FALSE off Off OFF", (BOOL, False)),
                      ("~ null Null NULL", (NULL, None)),
                      (".nan .NaN .NAN", (FLOAT, math.nan)),
                      (".inf .Inf .INF +.inf +.Inf +.INF", (FLOAT, math.inf)),
                      ("-.inf -.Inf -.INF", (FLOAT, -math.inf))):
    for _word in _words.split():
        _WORDS[_word] = _item
_WORDS[""] = (NULL, None)
# (`<<` is in go-yaml's map too, but `<` is no hint: as a value it is a string, as a plain key a merge.)
# resolveTable: the first characters that make go-yaml look further (the hint).
_SIGN_OR_DIGIT = frozenset("+-0123456789")
_HINTS = _SIGN_OR_DIGIT | frozenset("yYnNtTfFoO~.")

_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1
_BASES = {"b": (2, "01"), "o": (8, "01234567"), "x": (16, "0123456789abcdefABCDEF")}
# resolve.go's yamlStyleFloat, on the text without underscores.
_YAML_STYLE_FLOAT = r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
# strconv.ParseFloat's decimal syntax for a text that starts with a dot, underscores only
# between digits (strconv's underscoreOK).
_DOT_FLOAT = r"\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?"


class CannotDecode(ValueError):
    """go-yaml refuses a tagged scalar whose text is not of its tag (`!!int many`)."""


def resolve(tag: str, value: str) -> tuple[str, Scalar]:
    """(tag, value) as go-yaml v2's `resolve` gives them; `tag` is "" for a plain scalar.
    Integers are Python ints within int64 (or uint64) range, floats Python floats."""
    if tag not in _RESOLVABLE:
        return tag, value
    rtag, out = _resolve(tag, value)
    if tag in ("", rtag, STR):
        return rtag, out
    if tag == FLOAT and rtag == INT and isinstance(out, int) and _INT64_MIN <= out <= _INT64_MAX:
        return FLOAT, float(out)
    raise CannotDecode(f"cannot decode {short_tag(rtag)} `{value}` as a {short_tag(tag)}")


def _resolve(tag: str, value: str) -> tuple[str, Scalar]:
    hint = value[0] if value else "N"
    if tag == STR or (hint not in _HINTS and value):
        return STR, value
    word = _WORDS.get(value)
    if word is not None:
        return word
    if hint == ".":
        if value.isascii() and re.fullmatch(_DOT_FLOAT, value):
            real = float(value.replace("_", ""))
            if not math.isinf(real):  # strconv reports a range error, go-yaml reads a string
                return FLOAT, real
    elif hint in _SIGN_OR_DIGIT:
        if tag in ("", TIMESTAMP) and is_timestamp(value):
            return TIMESTAMP, value
        plain = value.replace("_", "")
        number = parse_int(plain)
        if number is not None:
            if _INT64_MIN <= number <= _INT64_MAX:  # strconv.ParseInt
                return INT, number
            if plain[0] not in "+-" and number <= _UINT64_MAX:  # then ParseUint, which takes no sign
                return INT, number
        if plain.isascii() and re.fullmatch(_YAML_STYLE_FLOAT, plain):
            real = float(plain)
            if not math.isinf(real):
                return FLOAT, real
        if plain.startswith("0b"):
            number = _digits(plain[2:], 2, "01")
            if number is not None and number <= _UINT64_MAX:
                return INT, number
        elif plain.startswith("-0b"):
            number = _digits(plain[3:], 2, "01")
            if number is not None and number <= -_INT64_MIN:
                return INT, -number
    return STR, value


def parse_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, ·)'s syntax with no range limit (the caller checks the range);
    None when it is not an integer. Never converts more digits than 64 bits can hold."""
    sign = 1
    if text[:1] in ("+", "-"):
        sign, text = (-1 if text[0] == "-" else 1), text[1:]
    if not text:
        return None
    base, alphabet = 10, "0123456789"
    if text[0] == "0":
        if len(text) >= 3 and text[1].lower() in _BASES:
            base, alphabet = _BASES[text[1].lower()]
            text = text[2:]
        else:
            base, alphabet = 8, "01234567"
            text = text[1:]
            if not text:
                return 0
    number = _digits(text, base, alphabet)
    return None if number is None else sign * number


def _digits(text: str, base: int, alphabet: str) -> int | None:
    """The digits of `text` in `base`, or None; past 64 bits, 2**64 (out of range) rather
    than the exact value, so that no length of text costs more than a scan."""
    if not text or any(c not in alphabet for c in text):
        return None
    significant = text.lstrip("0")
    if len(significant) > 64:  # more than any base here needs for 64 bits
        return 2**64
    number = int(significant or "0", base)
    return min(number, 2**64)


# resolve.go's allowedTimestampFormats, as time.Parse reads them: a year of four digits, month
# and day of one or two, then optionally a time of one- or two-digit fields with a fraction,
# and (after `T` or `t`) a zone `Z` or ±hh:mm (hours to 24, minutes to 60); after a space, no zone.
_TIMESTAMP = (r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
              r"(?:(?:[Tt]([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:[.,][0-9]+)?(?:Z|[-+]([0-9]{2}):([0-9]{2})))"
              r"|(?: ([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:[.,][0-9]+)?))?")


def is_timestamp(value: str) -> bool:
    """Whether go-yaml's parseTimestamp accepts `value`."""
    match = re.fullmatch(_TIMESTAMP, value) if value.isascii() else None
    if match is None:
        return False
    year, month, day = (int(part) for part in match.group(1, 2, 3))
    try:
        date(year if year > 0 else 2000, month, day)  # time.Parse knows year 0 is a leap year
    except ValueError:
        return False
    clock = [int(part) for part in match.groups()[3:] if part is not None]
    if clock:
        hour, minute, second = clock[:3]
        if hour > 23 or minute > 59 or second > 59:
            return False
        if len(clock) == 5 and (clock[3] > 24 or clock[4] > 60):
            return False
    return True


def short_tag(tag: str) -> str:
    return "!!" + tag[len("tag:yaml.org,2002:"):] if tag.startswith("tag:yaml.org,2002:") else tag


def json_number(value: int | float) -> int | float:
    """A number as it is once written as JSON by Go and read back by the API server: a float
    with an integral value below 1e21 is written without a fraction (`1e3` → 1000), and so is
    read as an integer. Raises ValueError for NaN and infinities, which JSON cannot hold."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError(f"json: unsupported value: {_go_special(value)}")
        if value.is_integer() and abs(value) < 1e21:
            # Go writes the shortest digits that read back as the float, then zeros:
            # 2**63 as a float is 9223372036854775808 in binary, "9223372036854776000" in JSON.
            return int(value) if abs(value) < 2**53 else int(Decimal(repr(value)))
    return value


def _go_special(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def key_string(tag: str, value: Scalar) -> str:
    """A mapping key as sigs.k8s.io/yaml's convertToJSONableObject writes it; raises ValueError
    for the keys it refuses (null, and integers beyond int64, which go-yaml gives as uint64).
    `value` is what `resolve` gave with `tag`: an int for INT, a float for FLOAT, else a str."""
    if tag == BOOL:
        return "true" if value else "false"
    if tag == INT:
        assert isinstance(value, int)
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(f"unsupported map key of type: uint64, key: {value}")
        return str(value)
    if tag == FLOAT:
        assert isinstance(value, float)
        return _float32_g(value)
    if tag == NULL:
        raise ValueError("unsupported map key of type: %!s(<nil>), key: <nil>")
    assert isinstance(value, str)
    return value


def _float32_g(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32) with go-yaml's names for the special values."""
    if math.isnan(value):
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.copysign(math.inf, value)
    if math.isinf(single):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    for precision in range(9):  # the shortest decimal that reads back as the same float32
        text = f"{single:.{precision}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, exponent = text.split("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "")
    exp = int(exponent)
    if exp < -4 or exp >= 6:  # %e when shortest: the exponent outside [-4, 6)
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    point = exp + 1
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def plain_reads_as_string(value: str) -> bool:
    """Whether go-yaml reads `value`, written as a plain scalar, as that very string."""
    return value != "<<" and _resolve("", value)[0] == STR  # `<<` as a key merges
