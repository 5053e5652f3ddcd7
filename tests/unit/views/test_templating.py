"""`templating.table`, the one table builder: columns padded kubectl-style, numbers aligned right."""

from __future__ import annotations

from kubectl_disagg.views.templating import table


def test_columns_are_padded_to_their_widest_cell_two_spaces_apart():
    assert table(["ROLE", "READY"], [["prefill", 2], ["decode", 10]], indent="  ") == [
        "  ROLE     READY",
        "  prefill  2",
        "  decode   10",
    ]


def test_right_aligned_columns_and_rows_without_headers():
    assert table(["STEP", "KIND"], [[0, "initial"], [10, "scale up"]], right=(0,)) == [
        "STEP  KIND",
        "   0  initial",
        "  10  scale up",
    ]
    assert table(None, [["prefill 7/7", "decode 3/3"], ["prefill 10/11", "decode 3/3"]]) == [
        "prefill 7/7    decode 3/3",
        "prefill 10/11  decode 3/3",
    ]
