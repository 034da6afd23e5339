"""Progress bars: what they show is shown as given."""
from __future__ import annotations

import io

from rich.console import Console

from nmtkit import progress as progress_module


def test_a_description_that_looks_like_rich_markup_is_shown_as_given(monkeypatch):
    shown = io.StringIO()
    monkeypatch.setattr(progress_module, "console", Console(file=shown, force_terminal=True, width=200))
    bar = progress_module.progress(transient=False)
    bar.disable = False  # (stderr is not a terminal under pytest)
    with bar:
        bar.advance(bar.add_task("encoding [/x]", total=2, info="[bold]y"))
    assert "encoding [/x]" in shown.getvalue() and "[bold]y" in shown.getvalue()


def test_log_lines_show_line_numbers_and_words_as_given(capsys):
    """(rich read ":100:" and ":1234:" as emoji codes: "<stdin>💯 invalid UTF-8", and a prefix's word ":fire:" 🔥)"""
    progress_module.warn("<stdin>:100: invalid UTF-8 (byte 3 of the line); writing an empty line")
    progress_module.log("in.txt:1234: 5 tokens, truncated to 3; ':fire:' not in the target vocabulary [/x]")
    assert capsys.readouterr().err == ("warning: <stdin>:100: invalid UTF-8 (byte 3 of the line); writing an empty "
                                       "line\nin.txt:1234: 5 tokens, truncated to 3; ':fire:' not in the target "
                                       "vocabulary [/x]\n")


def test_lines_of_one_kind_are_named_up_to_a_bound_then_counted(capsys):
    for before in range(progress_module.NAMED_LINES + 3):
        progress_module.warn_line(before, f"in.txt:{before + 1}: cut", "in.txt: lines cut")
    said = capsys.readouterr().err.splitlines()
    assert said[:-1] == [f"warning: in.txt:{k + 1}: cut" for k in range(progress_module.NAMED_LINES)]
    assert said[-1] == (f"warning: in.txt: lines cut: more than {progress_module.NAMED_LINES}; the others are counted, "
                        "not named (the count comes at the end)")
