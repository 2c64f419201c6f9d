"""The server-drawn SVG charts: escaped text, round tick labels, an empty chart says so."""

import re

from cli_org.faces.web.svg import Series, line_chart


def _ticks(svg: str) -> list[str]:
    return re.findall(r'text-anchor="end">([^<]+)</text>', svg)


def test_labels_and_series_names_are_escaped():
    svg = str(line_chart(["<script>x</script>", "b"], [Series("<img src=x>", [1.0, 2.0])], title="a<b"))
    assert "<script>" not in svg and "<img" not in svg
    assert "&lt;script&gt;" in svg and "&lt;img src=x&gt;" in svg and 'aria-label="a&lt;b"' in svg


def test_tick_labels_are_round_numbers():
    assert _ticks(str(line_chart(["a", "b"], [Series("n", [12.0, 38.0])], title="t"))) == ["0", "10", "20", "30", "40"]
    assert _ticks(str(line_chart(["a"], [Series("rate", [0.5])], title="t", top=1.0))) == [
        "0",
        "0.25",
        "0.5",
        "0.75",
        "1",
    ]


def test_one_point_per_value_and_none_leaves_a_gap():
    svg = str(line_chart(["a", "b", "c"], [Series("n", [1.0, None, 3.0])], title="t"))
    assert svg.count("<circle") == 2


def test_a_chart_without_values_says_so():
    assert "no data yet" in str(line_chart([], [Series("n", [])], title="t"))
