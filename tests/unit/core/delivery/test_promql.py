"""The offline PromQL check against Prometheus's own parser: every expression of a corpus (written
ones, and seeded mutations of them) goes to `promtool check rules` (Prometheus 2.42's parser) and
to `core.delivery.promql.parse`; both must accept or both refuse. Plus the readings the templating relies on."""

from __future__ import annotations

import random

import pytest

from kubectl_disagg.core.delivery import promql
from tests.oracles.prometheus_oracle import promtool_refusals

VALID = [
    'histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{namespace="serving", revision="abc"}[5m])))',
    'histogram_quantile(0.95, sum(rate(vllm:time_per_output_token_seconds_bucket{slice=~"0|1|2"}[5m])) by (le))',
    'sum(rate(vllm:e2e_request_latency_seconds_sum[5m])) / sum(rate(vllm:e2e_request_latency_seconds_count[5m]))',
    "up", "up{}", 'up{job="a",}', "{job='a'}", '{__name__="up"}', "{job=~'.+'}", '{job!=""}', "1", "-1", "+1",
    "1.5e3", "0x1f", ".5", "5.", "Inf", "-inf", "NaN", "1 + 2 * 3 ^ 2 ^ 0.5", "1 > bool 2", "up > 1",
    "up == bool 1", "-up", "-up ^ 2", "(up)", "((up))", '"a string"', "`raw ${x}`", "up[5m]", "up[1h30m]",
    "up[5m] offset 1m", "up offset 5m", "up offset -5m", "up @ 100", "up @ start()", "up @ end()",
    "up[5m] @ 100 offset 5m", "up offset 5m @ 100", "rate(up[5m])[10m:1m]", "up[10m:]", "(up + 1)[5m:1m]",
    "rate(up[5m:1m])", "sum(up)", "sum by (job) (up)", "sum without (job) (up)", "sum(up) by (job)",
    "sum by () (up)", "sum by (job,) (up)", "by", "offset", "sum", "end", "SUM{a='b'}", "count offset 5m", "up AND up", "topk(3, up)", "bottomk(1, up)", "quantile(0.9, up)",
    'count_values("v", up)', "group(up)", "stddev(up)", "stdvar by (a) (up)", "SUM(up)", "sum BY (job) (up)",
    "up and on (job) up", "up or up", "up unless ignoring (a) up", "up * on (job) group_left (a) up",
    "up / ignoring (a) group_right up", "up + on () up", "time()", "pi()", "vector(1)", "scalar(up)",
    "round(up)", "round(up, 0.1)", "hour()", "hour(up)", 'label_replace(up, "a", "$1", "b", "(.*)")',
    'label_join(up, "a", ",", "b", "c")', 'label_join(up, "a", ",")', "clamp(up, 0, 1)", "abs(-up)",
    "absent(up)", "absent_over_time(up[5m])", "holt_winters(up[5m], 0.5, 0.5)", "predict_linear(up[5m], 60)",
    "quantile_over_time(0.5, up[5m])", "histogram_fraction(0, 1, up)", "sort_desc(up)", "timestamp(up)",
    "up # a comment", "up\n+ up", "sum(up) by (on, by, bool)", "up{on='1', sum='2'}", "a:b:c", ":a",
    "up atan2 up", "1 atan2 2", "foo_bar123", "{job=\"a\\\"b\"}", "{job=\"\\u00e9\\x41\\101\\n\"}",
    "up == 1 or up", "-(up)", "- - up", "up - -1", "up offset 1y2w3d4h5m6s7ms", "rate(up[5m]) > 0.5",
]

INVALID = [
    "", " ", "rate(up)", "sum(up", "sum up", "{}", '{job=""}', "{job=~'.*'}", 'up{__name__="x"}',
    "up{job}", "up{job=a}", 'up{job=="a"}', 'up{"job"="a"}', "up[5]", "up[5m", "up[]", "up[0s]", "up[5m:1m:1m]",
    "(up)[5m]", "rate(up[5m])[5m]", "up[5m][5m]", "up[5m][5m:]", "rate(up[5m]) offset 5m", "1 offset 5m",
    "up offset 5m offset 5m", "up offset 5m [5m]", "up @ 1 @ 2", "up @ start", "up @ foo()", "up offset 5",
    "1 > 2", "1 and 2", "up and 1", "1 + on (a) up", "up + bool up", "up and on (a) group_left up",
    "up * on (a) group_left (a) up", '"a" + 1', "up[5m] + 1", "-up[5m]", "-'a'", "sum(up, up)",
    "topk(up)", "topk('a', up)", 'count_values(1, up)', "sum(rate(up[5m])[5m])", "sum(up[5m])",
    "nosuch(up)", "rate(up[5m],)", "round(up, 1, 2)", "clamp(up, 1)", "label_join(up, 'a')",
    "histogram_quantile(up, 0.5)", "vector(up)", "time(1)", "sum by (a:b) (up)", "sum by (job) up",
    "sum by job (up)", "up by (a)", "on", "bool", "up bool", "up +", "* up", "up )", "(up",
    "up{job='a'", "up{job='a'}}", "up}", "up]", "up[5m]]", "5m", "up + 5m", "up @ Inf", "up @ NaN",
    "'unterminated", '"bad \\q escape"', '"line\nbreak"', "up{a=~'('}", "up !", "up ==", "up == == up", "up and", "atan2", "on{a='b'}", "sum by (without) (up)",
    "1 2", "up up", "up{a='1' b='2'}", "0x", "1e", "1.2.3", "1a", "up[5x]", "up[m]", "up[5m:5]",
    "up @ 1.5e400", "sum()", "up offset -", "up[1m5h]", "start()", "group_left",
    "label_replace(up, 1, 'a', 'b', 'c')", "up[5m] @ start() @ end()",
]


def _mutations(seed: int, count: int) -> list[str]:
    """Seeded small edits of the valid corpus: a character dropped, doubled or swapped, one
    fragment inserted: the near misses a person types."""
    rng = random.Random(seed)
    fragments = ["(", ")", "{", "}", "[", "]", ",", ":", "5m", "1", '"a"', "up", "by", "offset", "@", "-", "+",
                 "bool", "on", "=", "=~", " ", "sum", "rate", "==", "#", "Inf", "group_left"]
    out = []
    for _ in range(count):
        text = rng.choice(VALID)
        for _ in range(rng.choice((1, 1, 2))):
            text = _mutation(rng, text, fragments)
        out.append(text)
    return out


def _mutation(rng: random.Random, text: str, fragments: list[str]) -> str:
    position, kind = rng.randrange(len(text) + 1), rng.randrange(4)
    if kind == 0 and text:
        position = min(position, len(text) - 1)
        return text[:position] + text[position + 1:]
    if kind == 1 and text:
        position = min(position, len(text) - 1)
        return text[:position] + text[position] + text[position:]
    if kind == 2 and len(text) > 1:
        position = min(position, len(text) - 2)
        return text[:position] + text[position + 1] + text[position] + text[position + 2:]
    return text[:position] + rng.choice(fragments) + text[position:]


def _ours(text: str) -> str | None:
    try:
        promql.parse(text)
    except promql.PromQLError as error:
        return error.message
    return None


@pytest.mark.parametrize("corpus", ["written", "mutations"])
def test_refuses_what_prometheus_refuses(corpus):
    expressions = VALID + INVALID if corpus == "written" else _mutations(seed=33, count=5000)
    theirs = promtool_refusals(expressions)
    disagree = [(text, theirs_, _ours(text)) for text, theirs_ in zip(expressions, theirs)
                if (theirs_ is None) != (_ours(text) is None)]
    assert not disagree, "\n".join(f"{text!r}: prometheus: {t}; ours: {o}" for text, t, o in disagree[:40])


def test_corpus_is_what_it_says():
    assert all(_ours(text) is None for text in VALID)
    assert all(_ours(text) is not None for text in INVALID)


@pytest.mark.parametrize("text, kind", [("up", promql.VECTOR), ("1 + 1", promql.SCALAR), ("up[5m]", promql.MATRIX),
                                        ("'a'", promql.STRING), ("scalar(up) * 2", promql.SCALAR),
                                        ("sum(up) > bool 1", promql.VECTOR), ("time() > bool 1", promql.SCALAR)])
def test_types(text, kind):
    assert promql.parse(text).type == kind


def test_matchers_carry_unquoted_values():
    parsed = promql.parse('rate(a{x="q\\"uote", y=~`r\\d`}[1m]) + b{z!~\'\\u00e9\'}')
    assert parsed.matchers == ((promql.Matcher("x", "=", 'q"uote'), promql.Matcher("y", "=~", "r\\d")),
                               (promql.Matcher("z", "!~", "é"),))


def test_position_text():
    assert promql.position_text("a\nbc d", 5) == "2:4"
