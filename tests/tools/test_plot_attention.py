"""plot-attn's figures: written as images that grow with the sentence and change with the weights; CJK labels."""
import warnings

import matplotlib
import numpy as np
import pytest
from PIL import Image

from nmtkit.errors import NmtkitError
from nmtkit.tools.figures import cjk_family, needs_cjk, setup_fonts
from nmtkit.tools.plot_attention import plot_sentence


def sentence(n_src=4, n_tgt=5, seed=0, src=None):
    rng = np.random.default_rng(seed)
    src = src or [f"s{i}" for i in range(n_src - 1)] + ["</s>"]
    tgt = [f"t{i}" for i in range(n_tgt - 1)] + ["</s>"]
    source = rng.random((n_tgt, len(src)))
    target = np.zeros((n_tgt, n_tgt - 1))
    for j in range(1, n_tgt):
        target[j, :j] = rng.random(j)
        target[j, :j] /= target[j, :j].sum()
    encoders = rng.random((n_tgt, 3))
    return {"src_tokens": src, "tgt_tokens": tgt,
            "attention": {"source": source / source.sum(1, keepdims=True), "target": target,
                          "encoders": encoders / encoders.sum(1, keepdims=True)},
            "labels": {"encoders": ["source", "image", "sentinel"]}}


def draw(tmp_path, name, s, kind="source", word=None):
    out = tmp_path / f"{name}.png"
    plot_sentence(s, kind, out, 0, "a.h5", word)
    return np.asarray(Image.open(out).convert("RGB"))


@pytest.mark.parametrize("kind", ["source", "target", "encoders"])
def test_figures_grow_with_the_sentence_and_change_with_the_weights(tmp_path, kind):
    small = draw(tmp_path, "small", sentence(4, 5), kind)
    long = draw(tmp_path, "long", sentence(30, 25), kind)
    assert long.shape[1] > small.shape[1]  # wider; taller too, except with a row per encoder
    if kind != "encoders":
        assert long.shape[0] > small.shape[0]
    other = draw(tmp_path, "other", sentence(4, 5, seed=1), kind)
    assert other.shape == small.shape and (other != small).any()


def test_target_word_bars(tmp_path):
    s = sentence(4, 6)
    a = draw(tmp_path, "w3", s, "target", word=3)
    s["attention"]["target"][3, :3] = [1, 0, 0]
    b = draw(tmp_path, "w3b", s, "target", word=3)
    assert a.shape == b.shape and (a != b).any()
    for bad in (0, 6, -1):
        with pytest.raises(NmtkitError, match="--word"):
            draw(tmp_path, "bad", s, "target", word=bad)
    with pytest.raises(NmtkitError, match="--word goes with --kind target"):
        draw(tmp_path, "bad", s, "source", word=2)


def test_missing_kind_and_empty_sentence_are_clear_errors(tmp_path):
    s = sentence()
    del s["attention"]["target"]
    with pytest.raises(NmtkitError, match="a.h5: sentence 0 has no 'target' attention \\(it has: encoders, source\\)"):
        draw(tmp_path, "x", s, "target")
    with pytest.raises(NmtkitError, match="sentence 0 is empty"):
        draw(tmp_path, "x", {"src_tokens": [], "tgt_tokens": [], "attention": {}}, "source")
    with pytest.raises(NmtkitError, match="cannot tell the figure format"):
        plot_sentence(sentence(), "source", tmp_path / "x.jpg", 0, "a.h5")
    assert not list(tmp_path.iterdir())  # nothing left behind


def test_cjk_labels_render_with_an_installed_cjk_font(tmp_path):
    """Needs a font covering CJK: `make test` installs one (make cjk-font)."""
    family = cjk_family()
    assert family is not None, "no CJK font installed: run `make cjk-font` (Debian: fonts-wqy-microhei)"
    assert needs_cjk(["这是"]) and not needs_cjk(["this", "ü"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph would be a warning
        image = draw(tmp_path, "zh", sentence(src=["这", "是", "一个", "测试", "</s>"]))
    assert image.size > 0 and matplotlib.rcParams["font.family"] == ["DejaVu Sans", family]


def test_font_option(tmp_path):
    dejavu = matplotlib.get_data_path() + "/fonts/ttf/DejaVuSans.ttf"
    assert cjk_family(dejavu) == "DejaVu Sans"
    with pytest.raises(NmtkitError, match="--font: no such font file"):
        cjk_family(tmp_path / "none.ttf")
    (tmp_path / "junk.ttf").write_bytes(b"not a font")
    with pytest.raises(NmtkitError, match="not a font"):
        cjk_family(tmp_path / "junk.ttf")
    setup_fonts(["plain"])
    assert matplotlib.rcParams["font.family"] == ["DejaVu Sans"]


def drawn(monkeypatch, s, kind):
    """The figure plot_sentence draws for ``kind``: its image's cells (masked ones as NaN) and its axis labels."""
    figures = []
    monkeypatch.setattr("nmtkit.tools.plot_attention.save_figure", lambda fig, out: figures.append(fig))
    plot_sentence(s, kind, "unused.png", 0, "a.h5")
    ax = figures[0].axes[0]
    cells = np.ma.filled(np.ma.asarray(ax.images[0].get_array(), dtype=float), np.nan)
    return cells, [t.get_text() for t in ax.get_yticklabels()], [t.get_text() for t in ax.get_xticklabels()]


def test_each_cell_is_the_weight_of_its_row_s_output_over_its_column_s_token(monkeypatch):
    s = sentence(4, 6)
    cells, rows, cols = drawn(monkeypatch, s, "source")
    assert rows == s["tgt_tokens"] and cols == s["src_tokens"]
    np.testing.assert_array_equal(cells, s["attention"]["source"])  # rows: output tokens, not transposed
    cells, rows, cols = drawn(monkeypatch, s, "encoders")
    assert rows == ["source", "image", "sentinel"] and cols == s["tgt_tokens"]
    np.testing.assert_array_equal(cells, s["attention"]["encoders"].T)


def test_the_target_attention_shows_only_the_words_before_each_output(monkeypatch):
    s = sentence(4, 5)
    cells, rows, cols = drawn(monkeypatch, s, "target")
    assert rows == s["tgt_tokens"] and cols == s["tgt_tokens"][:4]
    earlier = np.tril(np.ones((5, 4), dtype=bool), -1)  # output j attends to the outputs before it: 0..j-1
    np.testing.assert_array_equal(cells[earlier], s["attention"]["target"][earlier])
    assert np.isnan(cells[~earlier]).all()  # itself and the future are drawn as cells that get no weight
