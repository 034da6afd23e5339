import torch

from nmtkit.inference import load_model
from nmtkit.search.attention_file import AttentionFile, AttentionWriter
from nmtkit.search.sources import TextSource
from nmtkit.search.translator import SearchOptions, Translator
from tests.conftest import unpack


def translator(ckpt, max_input_len=250, **kw):
    m, sv, tv = unpack(load_model(ckpt))
    return Translator(m, TextSource(sv, max_input_len), tv, SearchOptions(beam_size=2), torch.device("cpu"), **kw)


def test_one_result_per_line_in_order_with_empty_and_bad_lines(trained_ckpt):
    t = translator(trained_ckpt, max_input_len=3, chunk_size=2)
    lines = [b"forty-two\n", b"\n", b"   \n", b"\xff\xfe\n", b"one two three four five six\n", b"seven"]
    out = list(t.translate(lines))
    assert [r.index for r in out] == list(range(6))
    assert out[1].texts == [""] and out[2].texts == [""] and out[3].texts == [""]
    assert out[0].texts[0] and out[5].texts[0]
    assert t.source.invalid == [4] and t.source.truncated == 1


def test_each_line_gets_its_own_translation_whatever_the_lengths_of_the_others(trained_ckpt):
    """Lines are searched sorted by length and handed back in input order: each as translated alone."""
    lines = [b"seven hundred forty-two thousand one\n", b"nine\n", b"forty-two\n", b"three thousand five hundred\n"]
    together = [r.texts for r in translator(trained_ckpt).translate(lines)]
    alone = [list(translator(trained_ckpt).translate([line]))[0].texts for line in lines]
    assert together == alone and len({tuple(t) for t in alone}) >= 3


def test_attention_file_round_trip(trained_ckpt, tmp_path):
    w = AttentionWriter(tmp_path / "a.h5", arch="rnnsearch")
    t = translator(trained_ckpt, attention_out=w)
    out = list(t.translate([b"forty-two\n", b"\n", b"one hundred\n"]))
    w.close()
    with AttentionFile(tmp_path / "a.h5") as f:
        assert len(f) == 3 and f.attrs["arch"] == "rnnsearch"
        s = f[0]
        assert s["src_tokens"] == ["forty-two", "</s>"]
        assert " ".join(s["tgt_tokens"][:-1]) == out[0].texts[0] and s["tgt_tokens"][-1] == "</s>"
        assert s["attention"]["source"].shape == (len(s["tgt_tokens"]), 2)
        assert f[1]["src_tokens"] == [] and f[1]["attention"] == {}


def test_aborted_attention_file_leaves_nothing(tmp_path):
    w = AttentionWriter(tmp_path / "a.h5")
    w.abort()
    assert list(tmp_path.iterdir()) == []
