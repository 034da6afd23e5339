"""Tables of results: texts shown as given."""
from __future__ import annotations

from nmtkit.cli.tables import print_table


def test_names_that_look_like_rich_markup_are_shown_as_given(capsys):
    print_table("[b]scores", ["system", "BLEU [x]"], [["rnn[seed1]", "1.0"], ["[/x]", ""], ["[bold]y", "2.0"]])
    out = capsys.readouterr().out
    for text in ("[b]scores", "BLEU [x]", "rnn[seed1]", "[/x]", "[bold]y"):
        assert text in out
    assert out.count(" - ") == 1  # (an empty cell)
