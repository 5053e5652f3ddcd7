"""Messages are safe to print: control characters from the input are escaped in the one place
errors are formatted."""

from __future__ import annotations

from kubectl_disagg.errors import Problem, UserError, escaped


def test_control_characters_and_line_breaks_are_escaped_tabs_kept():
    assert escaped("\x1b[31mred\x00\x7f\x9b\n\r\u2028\tend") == "\\x1b[31mred\\x00\\x7f\\x9b\\x0a\\x0d\\u2028\tend"
    assert escaped("ünïcode ✓") == "ünïcode ✓"


def test_every_problem_line_is_escaped_whatever_it_was_made_from():
    error = UserError([Problem("f.yaml", 4, "metadata.name", 'Invalid value: "\x1b[31mred"'),
                       "server said \x1b]0;x\x07"])
    assert error.lines() == ['f.yaml:4: metadata.name: Invalid value: "\\x1b[31mred"', "server said \\x1b]0;x\\x07"]
    assert all("\x1b" not in line for line in UserError("a\x1bb").lines())


def test_bidirectional_controls_are_escaped():
    """A right-to-left override from a manifest would show the rest of the line reversed."""
    bidi = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    assert escaped(f"name-{bidi}-end") == "name-\\u061c\\u200e\\u200f\\u202a\\u202b\\u202c\\u202d\\u202e" \
                                          "\\u2066\\u2067\\u2068\\u2069-end"
    assert UserError([Problem("f.yaml", 2, "metadata.name", "bad \u202eevil")]).lines() == \
        ["f.yaml:2: metadata.name: bad \\u202eevil"]
    assert escaped("\u200d\u05d0\u0627") == "\u200d\u05d0\u0627"  # joiners and RTL letters are text
