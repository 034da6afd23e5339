"""How translate writes a line's outputs: n-best lines with their alignments, and a warning where a text holds the
n-best field separator; JSON lines with their flags."""
from __future__ import annotations

import json

from nmtkit.cli.decoding import formatted
from nmtkit.search.translator import LineResult


def test_n_best_lines_end_with_each_outputs_alignment_where_there_are_alignments():
    result = LineResult(3, ["a b", ""], [-1.0, 0.0], [-2.0, 0.0], [3, 0], alignments=["0-0 1-1", ""])
    assert formatted(result, 2) == ("3 ||| a b ||| logprob= -2.0000 confidence= -0.6667 ||| -1.0000 ||| 0-0 1-1\n"
                                    "3 |||  ||| logprob= 0.0000 confidence= 0.0000 ||| 0.0000 ||| \n")  # (5 fields each)
    result.alignments = None  # (Moses' fields: the index, the text, features named "name= ", the score)
    assert formatted(result, 2).splitlines()[0] == "3 ||| a b ||| logprob= -2.0000 confidence= -0.6667 ||| -1.0000"
    assert formatted(result, 1) == "a b\n"


def test_a_text_holding_the_field_separator_is_warned_of(capsys):
    for texts, warned in ((["a ||| b", "c"], True), (["|||", "c"], True), (["a|||b", "c"], False)):
        formatted(LineResult(1, texts, [-1.0, -2.0], [-1.0, -2.0], [2, 2]), 2, name="in.en")
        assert ("warning: in.en:2: an output holds '|||'" in capsys.readouterr().err) == warned
    formatted(LineResult(1, ["a ||| b"], [-1.0], [-1.0], [2]), 1, name="in.en")  # (one a line: no fields)
    assert capsys.readouterr().err == ""


def test_a_json_line_carries_its_flags_and_the_constraints_its_best_output_lacks():
    result = LineResult(0, ["a"], [-1.0], [-2.0], [2], truncated=True, unmet=["x y"])
    line = json.loads(formatted(result, 1, "json"))
    assert line == {"index": 0, "outputs": [{"text": "a", "score": -1.0, "logprob": -2.0, "confidence": -1.0,
                                             "tokens": 2}], "truncated": True, "unmet_constraints": ["x y"]}
