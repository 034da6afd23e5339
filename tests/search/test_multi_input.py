"""Decoding lines of models with several inputs: one result per line whatever the fields, sorting by length across
streams, attention files with every input's tokens."""
import random

import numpy as np
import pytest
import torch

from nmtkit.errors import NmtkitError
from nmtkit.search.attention_file import AttentionFile, AttentionWriter
from nmtkit.search.sources import StreamSources, TextSource, sort_length, stack_inputs
from nmtkit.search.translator import SearchOptions, Translator
from tests.conftest import run
from tests.search.two_inputs import VOCAB, CopyBoth

WORDS = VOCAB.tokens[4:]


def translator(beam=2, batch_size=32, chunk_size=10_000, n_best=1, **kw):
    sources = StreamSources([TextSource(VOCAB, 5, "in.tsv", "src"), TextSource(VOCAB, 5, "in.tsv", "mt")], "in.tsv")
    return Translator(CopyBoth(), sources, VOCAB, SearchOptions(beam_size=beam, batch_size=batch_size, n_best=n_best),
                      torch.device("cpu"), chunk_size=chunk_size, **kw)


@pytest.mark.parametrize("beam", [1, 3])
def test_one_result_per_line_with_empty_lines_invalid_fields_and_lengths(beam):
    t = translator(beam, batch_size=2, chunk_size=4)
    lines = [(b"one two\n", b"three\n"), (b"\n", b"four\n"), (b"five",), (b"\xff\n", b"six\n"),
             (b"one two three four five six\n", b"seven"), (b"a", b"b", b"c"), (b"nine\r\n", b"eight nine ten\n"),
             (b"six\n", b"  \n"), b"seven\teight"]
    out = list(t.translate(lines))
    assert [r.index for r in out] == list(range(9))
    assert [r.texts[0] for r in out] == ["one two three", "", "", "", "one two three four five seven", "",
                                         "nine eight nine ten", "", ""]
    assert all(len(r.texts) == 1 for r in out)
    assert t.inputs.invalid == [3, 4, 6, 9] and t.inputs.wrong_fields == [3, 6, 9]
    assert t.inputs.problem == "of invalid UTF-8 or with the wrong number of fields"
    assert t.inputs.sources["src"].truncated == 1


def test_input_order_is_restored_across_batches_sorted_by_the_longest_stream():
    g = random.Random(3)
    pairs = [(" ".join(g.choices(WORDS, k=g.randrange(1, 6))), " ".join(g.choices(WORDS, k=g.randrange(1, 6))))
             for _ in range(40)]
    lines = [(src.encode(), mt.encode()) for src, mt in pairs]
    for batch_size in (1, 3, 7, 64):
        out = list(translator(batch_size=batch_size, chunk_size=25).translate(lines))
        assert [r.texts[0] for r in out] == [f"{src} {mt}" for src, mt in pairs]


def test_the_sort_length_is_the_longest_text_input():
    assert sort_length({"src": [4, 5], "mt": [4, 5, 6, 7]}) == 4
    assert sort_length({"src": [4, 5, 6], "image": np.zeros((196, 8), np.float32)}) == 3
    assert sort_length({"image": np.zeros((196, 8), np.float32)}) == 196
    assert stack_inputs([{"src": [4], "mt": [5]}, {"src": [6], "mt": [7, 8]}]) == {"src": [[4], [6]], "mt": [[5], [7, 8]]}


def test_postprocess_gets_the_line_fields_of_every_hypothesis():
    seen = []

    def post(index, fields, text, hypothesis):
        seen.append((index, fields))
        return f"{text} | {fields[1].decode().strip()}"

    out = list(translator(beam=3, n_best=2, postprocess=post).translate([(b"one\n", b"two\n"), (b"\n", b"x\n")]))
    assert out[0].texts[0] == "one two | two" and out[0].texts[1].endswith(" | two") and out[1].texts == ["", ""]
    assert seen == [(0, (b"one\n", b"two\n"))] * 2


def test_attention_file_holds_every_input_and_its_attention(tmp_path):
    w = AttentionWriter(tmp_path / "a.h5", inputs=["src", "mt"])
    t = translator(attention_out=w)
    out = list(t.translate([(b"one two\n", b"three\n"), (b"\n", b"x\n"), (b"four five six\n", b"seven eight\n")]))
    w.close()
    with AttentionFile(tmp_path / "a.h5") as f:
        assert len(f) == 3 and f.inputs == ["src", "mt"]
        s = f[0]
        assert s["src_tokens"] == ["one", "two", "</s>"] and s["input_tokens"] == {"mt": ["three", "</s>"]}
        assert " ".join(s["tgt_tokens"][:-1]) == out[0].texts[0]
        n = len(s["tgt_tokens"])
        assert s["attention"]["source"].shape == (n, 3)  # trimmed: the batch's src is padded to 4
        assert s["attention"]["source.mt"].shape == (n, 2)  # and its mt to 3
        np.testing.assert_array_equal(s["attention"]["source.mt"].argmax(1), [1, 1, 0, 1])
        assert s["attention"]["encoders"].shape == (n, 3) and s["labels"]["encoders"] == ["src", "mt", "sentinel"]
        assert f[1]["src_tokens"] == [] and f[1]["input_tokens"] == {} and f[1]["attention"] == {}
        assert f[2]["input_tokens"] == {"mt": ["seven", "eight", "</s>"]}


def test_files_without_input_tokens_still_read(tmp_path):
    w = AttentionWriter(tmp_path / "old.h5")
    w.add(0, ["a", "</s>"], ["b", "</s>"], {"source": np.full((2, 2), 0.5)})
    w.close()
    with AttentionFile(tmp_path / "old.h5") as f:
        assert f[0]["input_tokens"] == {} and f.inputs == [] and f[0]["src_tokens"] == ["a", "</s>"]


def test_inputs_of_different_lengths_are_refused_before_any_output(tmp_path):
    (tmp_path / "a").write_text("one\ntwo\nthree\n")
    (tmp_path / "b").write_text("one\ntwo\n")
    r = run(["translate", "-m", tmp_path / "model.pt", "-i", tmp_path / "a", "-i", tmp_path / "b",
             "-o", tmp_path / "out", "--attention-out", tmp_path / "a.h5"], ok=False)
    assert r.exit_code == 2
    assert r.stderr == (f"error: -i {tmp_path / 'b'}: 2 line(s), but the input {tmp_path / 'a'} has 3; the files "
                        "read side by side must have as many lines each\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_a_multimodal_models_sources_read_text_and_image_paths(tmp_path):
    """src text with its vocabulary, image paths into features as the corpus' record says (a 32-pixel VGG16)."""
    from types import SimpleNamespace

    from PIL import Image

    from nmtkit.data.captions import ImageSpec
    from nmtkit.data.streams import FEATURES, TOKENS, CorpusMeta, StreamInfo
    from nmtkit.search.sources import model_sources

    model = torch.nn.Linear(1, 1)
    model.inputs = ("src", "image")
    model.input_limit = lambda: None
    meta = CorpusMeta({"src": StreamInfo(TOKENS, len(VOCAB)), "image": StreamInfo(FEATURES, 512),
                       "tgt": StreamInfo(TOKENS, len(VOCAB))})
    loaded = SimpleNamespace(model=model, meta=meta, vocabs={"src": VOCAB}, config={"arch": "multi-source"},
                             images=ImageSpec(size=32).record())
    Image.new("RGB", (40, 30), "red").save(tmp_path / "red.png")
    sources = model_sources(loaded, "m.pt", ["in.tsv", "in.tsv"])
    inputs = sources.read(0, (b"one two\n", str(tmp_path / "red.png").encode()))
    assert inputs["image"].shape == (3, 32, 32) and sources.chunk_size == 256  # loaded; the CNN runs on a chunk
    sources.finish([None, inputs])
    assert inputs["src"] == VOCAB.encode("one two") and inputs["image"].shape == (4, 512)
    assert sources.labels(inputs) == {"src": ["one", "two", "</s>"], "image": ["r0c0", "r0c1", "r1c0", "r1c1"]}
    assert sort_length(inputs) == 2
    assert sources.read(1, (b"three\n", str(tmp_path / "none.png").encode())) is None
    assert sources.invalid == [2] and sources.problem == "naming an unreadable image"
    loaded.images = None
    with pytest.raises(NmtkitError, match="m.pt: its corpus had precomputed features"):
        model_sources(loaded, "m.pt", ["in.tsv", "in.tsv"])


class Quadrants(torch.nn.Module):
    """A stand-in CNN whose features tell images apart: the mean colour of each quadrant, ``[B, 4, 3]``."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(()))  # (a CNN has parameters: their device is the CNN's)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.scale * torch.nn.functional.avg_pool2d(images, images.shape[-1] // 2).flatten(2).transpose(1, 2)


def test_images_through_the_cnn_a_batch_at_a_time_get_each_its_own_features(tmp_path):
    """finish runs the CNN on batches of a chunk's images; each line still gets the features of its own image, as
    one image at a time would."""
    from PIL import Image

    from nmtkit.data.images import load_image
    from nmtkit.search.sources import ImageSource

    colours = ["red", "green", "blue", "white", "black"]
    for colour in colours:
        image = Image.new("RGB", (32, 32), colour)
        image.paste("yellow", (0, 0, 16, 16))
        image.save(tmp_path / f"{colour}.png")
    lines = [str(tmp_path / f"{c}.png").encode() for c in colours]
    expected = [Quadrants()(load_image(line.decode(), 16).unsqueeze(0))[0].detach().numpy() for line in lines]
    for batch_size in (1, 2):
        source = ImageSource(Quadrants(), 16, batch_size=batch_size)
        made = source.finish([source.read(k, line) for k, line in enumerate(lines)])
        assert all(np.allclose(m, e, atol=1e-6) for m, e in zip(made, expected))
    assert not np.allclose(expected[0], expected[1])
