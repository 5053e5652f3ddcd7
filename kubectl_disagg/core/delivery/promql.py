"""PromQL read as Prometheus 2.42 reads it, far enough to refuse what its parser refuses.

An analysis check's query is checked offline, before any rollout depends on it: the lexer and the
recursive-descent parser below follow Prometheus's `promql/parser` (lex.go, generated_parser.y,
parse.go's type checks): tokens, operator precedence, selectors and their modifiers, the function
table with argument types, aggregations, vector matching. The result is the expression's type and
every label matcher it holds (the templating's proof that a substituted name stays one value).
`tests/unit/core/delivery/test_promql.py` runs a corpus through Prometheus's own parser (`promtool check
rules`) and this one; they must agree on every expression.

About 600 lines on purpose: a lexer and a parser of one grammar, read beside Prometheus's own
files; the parser's rules call each other (an expression holds expressions), so split modules
would import each other in a cycle, and the lexer alone is no use to anything else here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from kubectl_disagg.manifests.source import JsonObject

SCALAR, VECTOR, MATRIX, STRING = "scalar", "instant vector", "range vector", "string"


class PromQLError(ValueError):
    """A parse error at `position` (0-based offset into the query)."""

    def __init__(self, position: int, message: str):
        super().__init__(message)
        self.position = position
        self.message = message


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str  # = != =~ !~
    value: str


@dataclass(frozen=True)
class Parsed:
    type: str
    matchers: tuple[tuple[Matcher, ...], ...]  # per vector selector, in query order


# --- lexer -----------------------------------------------------------------------------------

_KEYWORDS = {
    "and", "or", "unless", "atan2", "sum", "avg", "count", "min", "max", "group", "stddev", "stdvar",
    "topk", "bottomk", "count_values", "quantile", "offset", "by", "without", "on", "ignoring",
    "group_left", "group_right", "bool", "start", "end",
}
_AGGREGATIONS = {"sum", "avg", "count", "min", "max", "group", "stddev", "stdvar",
                 "topk", "bottomk", "count_values", "quantile"}
# Keywords that also name a metric where an expression starts (Prometheus's `metric_identifier`).
_METRIC_KEYWORDS = {"and", "or", "unless", "offset", "by", "without", "start", "end"} | _AGGREGATIONS
_AGGREGATION_PARAMS = {"topk": SCALAR, "bottomk": SCALAR, "quantile": SCALAR, "count_values": STRING}
_OPERATORS = ("==", "!=", "<=", ">=", "=~", "!~", "+", "-", "*", "/", "%", "^", "<", ">", "=",
              "(", ")", "{", "}", "[", "]", ",", ":", "@")
_DURATION = re.compile(r"(?:[0-9]+y)?(?:[0-9]+w)?(?:[0-9]+d)?(?:[0-9]+h)?(?:[0-9]+m)?(?:[0-9]+s)?(?:[0-9]+ms)?")
_DURATION_SECONDS = {"y": 365 * 86400, "w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 0.001}
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@dataclass(frozen=True)
class _Token:
    kind: str  # "op", "ident" (no colon), "metric" (with a colon), "number", "duration", "string", "eof"
    text: str
    position: int
    value: str | float | None = None  # a string's text, a keyword lower-cased; a number's or duration's float


def _is_alpha(c: str) -> bool:
    return c == "_" or ("a" <= c <= "z") or ("A" <= c <= "Z")


def _is_alnum(c: str) -> bool:
    return _is_alpha(c) or ("0" <= c <= "9")


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    braces = brackets = 0
    while i < n:
        c = text[i]
        if c in " \t\n\r":
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c in "\"'`":
            end, value = _scan_string(text, i)
            out.append(_Token("string", text[i:end], i, value))
            i = end
        elif brackets and (c.isdigit()):
            j = i
            while j < n and _is_alnum(text[j]):
                j += 1
            word = text[i:j]
            if re.fullmatch(r"[0-9]+", word):
                raise PromQLError(i, "missing unit character in duration")
            out.append(_duration_token(word, i))
            i = j
        elif c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            i = _number_or_duration(text, i, out)
        elif _is_alpha(c) or (c == ":" and not brackets and not braces):
            j = i
            while j < n and (_is_alnum(text[j]) or (text[j] == ":" and not braces)):
                j += 1
            word = text[i:j]
            if braces:
                out.append(_Token("ident", word, i))
            elif word.lower() in _KEYWORDS:
                out.append(_Token("keyword", word, i, word.lower()))
            elif word.lower() in ("inf", "nan"):
                out.append(_Token("number", word, i, float(word)))
            else:
                out.append(_Token("metric" if ":" in word else "ident", word, i))
            i = j
        else:
            op = next((op for op in _OPERATORS if text.startswith(op, i)), None)
            if op is None or (op == "=" and not braces) or (op == ":" and not brackets):
                raise PromQLError(i, f"unexpected character: {c!r}")
            if braces and op not in ("=", "!=", "=~", "!~", ",", "}"):
                raise PromQLError(i, f"unexpected character inside braces: {c!r}")
            if brackets and op not in (":", "]"):
                raise PromQLError(i, f"unexpected character in duration expression: {c!r}")
            braces += {"{": 1, "}": -1}.get(op, 0)
            brackets += {"[": 1, "]": -1}.get(op, 0)
            if braces < 0 or brackets < 0:
                raise PromQLError(i, f"unexpected {op}")
            if braces > 1 or brackets > 1:
                raise PromQLError(i, f"unexpected {op}")
            out.append(_Token("op", op, i))
            i += len(op)
    if braces:
        raise PromQLError(n, "unexpected end of input inside braces")
    if brackets:
        raise PromQLError(n, "unclosed left bracket")
    out.append(_Token("eof", "", n))
    return out


def _duration_token(word: str, position: int) -> _Token:
    if not word or not _DURATION.fullmatch(word):
        raise PromQLError(position, f'bad duration syntax: "{word}"')
    seconds = sum(int(number) * _DURATION_SECONDS[unit]
                  for number, unit in re.findall(r"([0-9]+)(ms|[ywdhms])", word))
    if seconds == 0:
        raise PromQLError(position, "duration must be greater than 0")
    return _Token("duration", word, position, seconds)


def _number_or_duration(text: str, i: int, out: list[_Token]) -> int:
    start, n = i, len(text)
    digits = "0123456789"
    if text.startswith(("0x", "0X"), i):
        digits += "abcdefABCDEF"
        i += 2
    while i < n and text[i] in digits:
        i += 1
    if i < n and text[i] == ".":
        i += 1
        while i < n and text[i] in digits:
            i += 1
    if i < n and text[i] in "eE" and len(digits) == 10:
        i += 1
        if i < n and text[i] in "+-":
            i += 1
        while i < n and text[i].isdigit():
            i += 1
    if i >= n or not _is_alnum(text[i]):
        word = text[start:i]
        try:
            value = float(int(word, 16)) if len(digits) > 10 else float(word)
        except ValueError:
            raise PromQLError(start, f'bad number syntax: "{word}"') from None
        out.append(_Token("number", word, start, value))
        return i
    j = start
    while j < n and _is_alnum(text[j]):
        j += 1
    word = text[start:j]
    if not re.fullmatch(r"([0-9]+(ms|[ywdhms]))+", word):
        raise PromQLError(start, f'bad number or duration syntax: "{word}"')
    out.append(_duration_token(word, start))
    return j


_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def _scan_string(text: str, start: int) -> tuple[int, str]:
    """(end offset, unquoted value) of the string literal opening at `start`."""
    quote, i, n = text[start], start + 1, len(text)
    value: list[str] = []
    while True:
        if i >= n or (text[i] == "\n" and quote != "`"):
            raise PromQLError(start, "unterminated quoted string")
        c = text[i]
        if c == quote:
            return i + 1, "".join(value)
        if c == "\\" and quote != "`":
            i, char = _escape(text, i, quote)
            value.append(char)
            continue
        value.append(c)
        i += 1


def _escape(text: str, i: int, quote: str) -> tuple[int, str]:
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if nxt in _SIMPLE_ESCAPES:
        return i + 2, _SIMPLE_ESCAPES[nxt]
    if nxt == quote:
        return i + 2, quote
    for prefix, width, base in (("x", 2, 16), ("u", 4, 16), ("U", 8, 16)):
        if nxt == prefix:
            digits = text[i + 2:i + 2 + width]
            if len(digits) != width or not re.fullmatch(r"[0-9a-fA-F]+", digits):
                raise PromQLError(i, "invalid escape sequence in string")
            code = int(digits, base)
            if prefix != "x" and (code > 0x10FFFF or 0xD800 <= code <= 0xDFFF):
                raise PromQLError(i, "escape sequence is an invalid Unicode code point")
            return i + 2 + width, chr(code)
    if nxt in "01234567" and nxt:
        digits = text[i + 1:i + 4]
        if len(digits) != 3 or not re.fullmatch(r"[0-7]+", digits) or int(digits, 8) > 255:
            raise PromQLError(i, "invalid escape sequence in string")
        return i + 4, chr(int(digits, 8))
    raise PromQLError(i, "unknown escape sequence in string")


# --- functions (Prometheus 2.42's promql/parser/functions.go: argument types, optional ones) ----

_V, _M, _S, _T = VECTOR, MATRIX, SCALAR, STRING
_FUNCTIONS: dict[str, tuple[tuple[str, ...], int, str]] = {}  # name: (arguments, variadic, returns)
for _names, _args, _variadic in (
    ("abs absent acos acosh asin asinh atan atanh ceil cos cosh deg exp floor histogram_count "
     "histogram_sum ln log10 log2 rad sgn sin sinh sort sort_desc sqrt tan tanh timestamp", (_V,), 0),
    ("absent_over_time avg_over_time changes count_over_time delta deriv idelta increase irate "
     "last_over_time max_over_time min_over_time present_over_time rate resets stddev_over_time "
     "stdvar_over_time sum_over_time", (_M,), 0),
    ("days_in_month day_of_month day_of_week day_of_year hour minute month year", (_V,), 1),
    ("clamp", (_V, _S, _S), 0), ("clamp_max clamp_min", (_V, _S), 0),
    ("histogram_fraction", (_S, _S, _V), 0), ("histogram_quantile", (_S, _V), 0),
    ("holt_winters", (_M, _S, _S), 0), ("label_replace", (_V, _T, _T, _T, _T), 0),
    ("label_join", (_V, _T, _T, _T), -1), ("predict_linear", (_M, _S), 0),
    ("quantile_over_time", (_S, _M), 0), ("round", (_V, _S), 1), ("scalar", (_V,), 0),
    ("vector", (_S,), 0), ("pi time", (), 0),
):
    for _name in _names.split():
        _FUNCTIONS[_name] = (_args, _variadic, SCALAR if _name in ("scalar", "pi", "time") else VECTOR)


# --- parser ----------------------------------------------------------------------------------

@dataclass
class _Node:
    type: str
    kind: str = "expr"  # "selector", "matrix", "subquery", "number", "paren", "expr"
    offset: bool = False
    at: bool = False
    position: int = 0


_PRECEDENCE = [("or",), ("and", "unless"), ("==", "!=", "<=", "<", ">=", ">"), ("+", "-"),
               ("*", "/", "%", "atan2"), ("^",)]
_COMPARISONS = {"==", "!=", "<=", "<", ">=", ">"}
_SET_OPERATORS = {"and", "or", "unless"}


class _Parser:
    def __init__(self, text: str):
        self.tokens = _tokens(text)
        self.i = 0
        self.matchers: list[tuple[Matcher, ...]] = []

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def take(self) -> _Token:
        token = self.peek()
        self.i += 1
        return token

    def at_op(self, *texts: str) -> bool:
        token = self.peek()
        return (token.kind == "op" and token.text in texts) or (token.kind == "keyword" and token.value in texts)

    def expect(self, text: str, context: str) -> _Token:
        token = self.peek()
        if not self.at_op(text):
            raise PromQLError(token.position, f'unexpected {_describe(token)} {context}, expected "{text}"')
        return self.take()

    def parse(self) -> Parsed:
        if self.peek().kind == "eof":
            raise PromQLError(0, "no expression found in input")
        node = self.expression(0)
        token = self.peek()
        if token.kind != "eof":
            raise PromQLError(token.position, f"unexpected {_describe(token)}")
        return Parsed(node.type, tuple(self.matchers))

    def expression(self, level: int) -> _Node:
        if level == len(_PRECEDENCE):
            return self.unary()
        operators = _PRECEDENCE[level]
        left = self.expression(level + 1)
        while self.at_op(*operators):
            op_token = self.take()
            modifiers = self.binary_modifiers()
            # ^ is right-associative; every other level is left-associative.
            right = self.expression(level if op_token.text == "^" else level + 1)
            op_token = _Token(op_token.kind, str(op_token.value or op_token.text), op_token.position)
            left = _binary(op_token, left, right, modifiers)
        return left

    def binary_modifiers(self) -> JsonObject:
        modifiers: JsonObject = {}
        if self.at_op("bool"):
            self.take()
            modifiers["bool"] = True
        if self.at_op("on", "ignoring"):
            modifiers["matching"] = self.take().value
            modifiers["labels"] = self.grouping_labels()
            if self.at_op("group_left", "group_right"):
                self.take()
                modifiers["group"] = True
                modifiers["include"] = self.grouping_labels() if self.at_op("(") else []
        return modifiers

    def grouping_labels(self) -> list[str]:
        self.expect("(", "in grouping opts")
        labels: list[str] = []
        while not self.at_op(")"):
            token = self.take()
            if (token.kind not in ("ident", "keyword") or not _LABEL_NAME.fullmatch(token.text)
                    or token.value == "without"):
                raise PromQLError(token.position, f"unexpected {_describe(token)} in grouping opts, expected label")
            labels.append(token.text)
            if self.at_op(","):
                self.take()
            elif not self.at_op(")"):
                token = self.peek()
                raise PromQLError(token.position,
                                  f'unexpected {_describe(token)} in grouping opts, expected ")" or ","')
        self.take()
        return labels

    def unary(self) -> _Node:
        if self.at_op("+", "-"):
            token = self.take()
            # Unary minus binds as tightly as `*`: `-a ^ b` is `-(a ^ b)`, `-a * b` is `(-a) * b`.
            operand = self.expression(_PRECEDENCE.index(("^",)))
            if operand.kind == "number":
                return operand
            if operand.type not in (SCALAR, VECTOR):
                raise PromQLError(token.position, "unary expression only allowed on expressions of type "
                                                  f"scalar or instant vector, got {operand.type}")
            return _Node(operand.type, position=token.position)
        return self.postfix(self.primary())

    def postfix(self, node: _Node) -> _Node:
        while True:
            if self.at_op("["):
                node = self.range_or_subquery(node)
            elif self.at_op("offset"):
                token = self.take()
                if self.at_op("-"):
                    self.take()
                duration = self.take()
                if duration.kind != "duration":
                    raise PromQLError(duration.position, f"unexpected {_describe(duration)} in offset, expected duration")
                _modify(node, "offset", token, "offset modifier", "offset may not be set multiple times")
            elif self.at_op("@"):
                token = self.take()
                self.at_timestamp()
                _modify(node, "at", token, "@ modifier", "@ <timestamp> may not be set multiple times")
            else:
                return node

    def at_timestamp(self) -> None:
        if self.at_op("start", "end"):
            self.take()
            self.expect("(", "in @")
            self.expect(")", "in @")
            return
        sign = -1.0 if self.at_op("-") else 1.0
        if self.at_op("+", "-"):
            self.take()
        token = self.take()
        if token.kind != "number":
            raise PromQLError(token.position, f"unexpected {_describe(token)} in @, expected timestamp")
        assert isinstance(token.value, float)  # a number token's value
        value = sign * token.value
        if math.isinf(value) or math.isnan(value) or abs(value) * 1000 > 2 ** 63 - 1:
            raise PromQLError(token.position, "timestamp out of bounds for @ modifier")

    def range_or_subquery(self, node: _Node) -> _Node:
        bracket = self.take()
        duration = self.take()
        if duration.kind != "duration":
            raise PromQLError(duration.position, f"unexpected {_describe(duration)} in subquery or range, "
                                                 "expected duration")
        if self.at_op(":"):
            self.take()
            if self.peek().kind == "duration":
                self.take()
            self.expect("]", "in subquery selector")
            if node.type != VECTOR:
                raise PromQLError(bracket.position, f"subquery is only allowed on instant vector, got "
                                                    f"{node.type} instead")
            return _Node(MATRIX, "subquery", position=node.position)
        self.expect("]", "in subquery or range")
        if node.kind != "selector":
            raise PromQLError(bracket.position, "ranges only allowed for vector selectors")
        if node.offset or node.at:
            raise PromQLError(bracket.position, "no offset or @ modifiers allowed before range")
        return _Node(MATRIX, "matrix", position=node.position)

    def primary(self) -> _Node:
        token = self.peek()
        if token.kind == "number":
            self.take()
            return _Node(SCALAR, "number", position=token.position)
        if token.kind == "string":
            self.take()
            return _Node(STRING, "string", position=token.position)
        if self.at_op("("):
            self.take()
            inner = self.expression(0)
            self.expect(")", "in parenthesized expression")
            return _Node(inner.type, "paren", position=token.position)
        if self.at_op("{"):
            return self.selector(None, token.position)
        if token.kind == "keyword" and token.value in _AGGREGATIONS and (
                self.peek(1).text == "(" or self.peek(1).value in ("by", "without")):
            return self.aggregation()
        if token.kind in ("ident", "metric") or (token.kind == "keyword" and token.value in _METRIC_KEYWORDS):
            self.take()
            if token.kind == "ident" and self.at_op("("):
                return self.call(token)
            return self.selector(token.text, token.position)
        if token.kind == "eof":
            raise PromQLError(token.position, "unexpected end of input")
        raise PromQLError(token.position, f"unexpected {_describe(token)}")

    def selector(self, name: str | None, position: int) -> _Node:
        matchers: list[Matcher] = []
        if self.at_op("{"):
            self.take()
            while not self.at_op("}"):
                matchers.append(self.matcher())
                if self.at_op(","):
                    self.take()
                elif not self.at_op("}"):
                    token = self.peek()
                    raise PromQLError(token.position, f'unexpected {_describe(token)} in label matching, '
                                                      'expected "," or "}"')
            self.take()
        if name is not None:
            for matcher in matchers:
                if matcher.label == "__name__":
                    raise PromQLError(position, f'metric name must not be set twice: "{name}" or "{matcher.value}"')
        if name is None and not any(not _matches_empty(m) for m in matchers):
            raise PromQLError(position, "vector selector must contain at least one non-empty matcher")
        self.matchers.append(tuple(matchers))
        return _Node(VECTOR, "selector", position=position)

    def matcher(self) -> Matcher:
        label = self.take()
        if label.kind != "ident":
            raise PromQLError(label.position, f"unexpected {_describe(label)} in label matching, expected label")
        op = self.take()
        if op.kind != "op" or op.text not in ("=", "!=", "=~", "!~"):
            raise PromQLError(op.position, f"unexpected {_describe(op)} in label matching, "
                                           "expected label matching operator")
        value = self.take()
        if value.kind != "string":
            raise PromQLError(value.position, f"unexpected {_describe(value)} in label matching, expected string")
        assert isinstance(value.value, str)  # a string token's value
        if op.text in ("=~", "!~"):
            try:
                re.compile(value.value)
            except re.error as error:
                raise PromQLError(value.position, f"error parsing regexp: {error}") from None
        return Matcher(label.text, op.text, value.value)

    def arguments(self, context: str) -> list[_Node]:
        self.expect("(", context)
        args: list[_Node] = []
        while not self.at_op(")"):
            args.append(self.expression(0))
            if self.at_op(","):
                comma = self.take()
                if self.at_op(")"):
                    raise PromQLError(comma.position, f"trailing commas not allowed in {context}")
            elif not self.at_op(")"):
                token = self.peek()
                raise PromQLError(token.position, f'unexpected {_describe(token)} in {context}, expected "," or ")"')
        self.take()
        return args

    def call(self, name: _Token) -> _Node:
        if name.text not in _FUNCTIONS:
            raise PromQLError(name.position, f'unknown function with name "{name.text}"')
        types, variadic, returns = _FUNCTIONS[name.text]
        args = self.arguments("function call args")
        least = len(types) - (1 if variadic > 0 else 0)
        if variadic < 0:
            least = len(types) - 1
        if len(args) < least or (variadic >= 0 and len(args) > len(types)):
            expected = (f"at least {least}" if variadic < 0 else
                        f"{least} or {len(types)}" if variadic > 0 else f"{len(types)}")
            raise PromQLError(name.position, f'expected {expected} argument(s) in call to "{name.text}", '
                                             f"got {len(args)}")
        for index, arg in enumerate(args):
            want = types[min(index, len(types) - 1)]
            if arg.type != want:
                raise PromQLError(arg.position, f'expected type {want} in call to function "{name.text}", '
                                                f"got {arg.type}")
        return _Node(returns, position=name.position)

    def aggregation(self) -> _Node:
        op = self.take()
        if self.at_op("by", "without"):
            self.take()
            self.grouping_labels()
            args = self.arguments("aggregation")
        else:
            args = self.arguments("aggregation")
            if self.at_op("by", "without"):
                self.take()
                self.grouping_labels()
        assert isinstance(op.value, str)  # a keyword's value
        want = 2 if op.value in _AGGREGATION_PARAMS else 1
        if len(args) != want:
            raise PromQLError(op.position, f"wrong number of arguments for aggregate expression provided, "
                                           f"expected {want}, got {len(args)}")
        if args[-1].type != VECTOR:
            raise PromQLError(args[-1].position, "expected type instant vector in aggregation expression, "
                                                 f"got {args[-1].type}")
        if want == 2 and args[0].type != _AGGREGATION_PARAMS[op.value]:
            raise PromQLError(args[0].position, f"expected type {_AGGREGATION_PARAMS[op.value]} in aggregation "
                                                f"parameter, got {args[0].type}")
        return _Node(VECTOR, position=op.position)


def _modify(node: _Node, modifier: str, token: _Token, what: str, twice: str) -> None:
    """Set `modifier` (offset or at) on `node`, where Prometheus allows it: once, on a selector or subquery."""
    if node.kind not in ("selector", "matrix", "subquery"):
        raise PromQLError(token.position, f"{what} must be preceded by an instant vector selector or range "
                                          "vector selector or a subquery")
    if getattr(node, modifier):
        raise PromQLError(token.position, twice)
    setattr(node, modifier, True)


def _binary(op: _Token, left: _Node, right: _Node, modifiers: JsonObject) -> _Node:
    text = op.text
    for side in (left, right):
        if side.type not in (SCALAR, VECTOR):
            raise PromQLError(op.position, "binary expression must contain only scalar and instant vector types")
    if modifiers.get("bool") and text not in _COMPARISONS:
        raise PromQLError(op.position, "bool modifier can only be used on comparison operators")
    both_scalar = left.type == SCALAR and right.type == SCALAR
    if text in _COMPARISONS and both_scalar and not modifiers.get("bool"):
        raise PromQLError(op.position, "comparisons between scalars must use BOOL modifier")
    if text in _SET_OPERATORS and (left.type == SCALAR or right.type == SCALAR):
        raise PromQLError(op.position, f'set operator "{text}" not allowed in binary scalar expression')
    if "matching" in modifiers and (left.type != VECTOR or right.type != VECTOR):
        raise PromQLError(op.position, "vector matching only allowed between instant vectors")
    if modifiers.get("group") and text in _SET_OPERATORS:
        raise PromQLError(op.position, f'no grouping allowed for "{text}" operation')
    for label in modifiers.get("include", []):
        if modifiers.get("matching") == "on" and label in modifiers.get("labels", []):
            raise PromQLError(op.position, f'label "{label}" must not occur in ON and GROUP clause at once')
    return _Node(SCALAR if both_scalar else VECTOR, position=left.position)


def _matches_empty(matcher: Matcher) -> bool:
    if matcher.op in ("=", "!="):
        return (matcher.value == "") == (matcher.op == "=")
    matched = re.fullmatch(matcher.value, "", re.DOTALL) is not None
    return matched == (matcher.op == "=~")


def _describe(token: _Token) -> str:
    if token.kind == "eof":
        return "end of input"
    if token.kind in ("number", "duration", "string"):
        return f"{token.kind} {token.text}"
    return f'"{token.text}"'


def parse(text: str) -> Parsed:
    """The expression's type and its selectors' matchers; raises PromQLError where Prometheus would."""
    return _Parser(text).parse()


def position_text(text: str, position: int) -> str:
    """Prometheus's `LINE:COLUMN` for an offset into `text` (1-based, columns in characters)."""
    before = text[:position]
    return f"{before.count(chr(10)) + 1}:{position - (before.rfind(chr(10)) + 1) + 1}"
