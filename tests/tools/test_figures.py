"""What every figure shares: which labels need a CJK font, the format read from the file name, atomic saving
(tests/tools/test_plot_attention.py draws figures with them)."""
import pytest

from nmtkit.errors import NmtkitError
from nmtkit.tools.figures import figure_format, needs_cjk, pyplot, save_figure


def test_kana_hangul_han_and_cjk_punctuation_need_a_cjk_font():
    for text in ("ひらがな", "カタカナ", "、", "。", "漢字", "한국어", "ｶﾅ"):
        assert needs_cjk([text]), text
    assert not needs_cjk(["plain", "ü", "€", "—"])


def test_the_format_is_the_suffix_in_either_case():
    assert [figure_format(f"fig.{s}", "-o") for s in ("png", "PNG", "Pdf", "svg")] == ["png", "png", "pdf", "svg"]
    with pytest.raises(NmtkitError, match="^-o: cannot tell the figure format of fig.jpg"):
        figure_format("fig.jpg", "-o")


def test_a_figure_that_fails_halfway_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "fig.png"
    path.write_bytes(b"the previous figure")
    fig = pyplot().figure()

    def broken(f, **kw):
        f.write(b"\x89PNG half")
        raise OSError("disk went away")

    fig.savefig = broken
    with pytest.raises(OSError, match="disk went away"):
        save_figure(fig, path)
    assert path.read_bytes() == b"the previous figure" and [p.name for p in tmp_path.iterdir()] == ["fig.png"]
    save_figure(pyplot().figure(), tmp_path / "new.PNG")
    assert (tmp_path / "new.PNG").read_bytes().startswith(b"\x89PNG")
