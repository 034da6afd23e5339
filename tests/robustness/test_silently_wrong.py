"""Nothing silently wrong: averaging refuses checkpoints of models built differently (not only of other shapes),
captioning refuses CNN weights other than those its corpus was made with, and the text of a reserved symbol
(<pad>, <s>, </s>) in a line is text, never a control id."""
from __future__ import annotations

import numpy as np
import torch

from nmtkit.checkpoint import FOR_DECODING, load_checkpoint, save_checkpoint
from nmtkit.data.shards import Corpus, Shard
from nmtkit.data.vocab import BOS, EOS, PAD, UNK
from tests.conftest import run

TINY_TRANSFORMER = ["--arch", "transformer", "--d-model", 16, "--ffn-size", 16, "--enc-layers", 1, "--dec-layers", 1,
                    "--valid-max-sentences", 2, "--max-steps", 1, "--valid-every", 1]


def test_average_refuses_models_built_differently_with_equal_shapes(corpus_dir, tmp_path):
    for heads in (2, 4):
        run(["train", "--data", corpus_dir, "--save-dir", tmp_path / f"h{heads}", *TINY_TRANSFORMER, "--heads", heads])
    a, b = tmp_path / "h2" / "last.pt", tmp_path / "h4" / "last.pt"
    r = run(["average", a, b, "-o", tmp_path / "avg.pt"], ok=False)
    assert r.exit_code == 2 and f"{a} and {b}: models built differently (--heads 2 against 4)" in r.stderr
    assert not (tmp_path / "avg.pt").exists()
    ckpt = load_checkpoint(a, FOR_DECODING)
    tokens = list(ckpt["vocab"]["tgt"]["tokens"])
    tokens[4], tokens[5] = tokens[5], tokens[4]  # the same size, other words at two ids
    swapped = {**ckpt["vocab"], "tgt": {"kind": "word", "tokens": tokens}}
    save_checkpoint(tmp_path / "swapped.pt", dict(ckpt, vocab=swapped))
    r = run(["average", a, tmp_path / "swapped.pt", "-o", tmp_path / "avg.pt"], ok=False)
    assert "(the vocabularies of tgt differ)" in r.stderr and not (tmp_path / "avg.pt").exists()
    (tmp_path / "copy.pt").write_bytes(a.read_bytes())
    run(["average", a, tmp_path / "copy.pt", "-o", tmp_path / "avg.pt"])
    resumed = {**ckpt["config"], "dropout": 0.3}  # a run resumed with another --dropout
    save_checkpoint(tmp_path / "resumed.pt", dict(ckpt, config=resumed))
    run(["average", a, tmp_path / "resumed.pt", "-o", tmp_path / "avg.pt"])  # how it trains: still one model


def test_captioning_refuses_cnn_weights_when_the_corpus_had_random_ones(tmp_path):
    from nmtkit.data.vgg import VGG16Features
    from tests.data.test_captions import write_images

    write_images(tmp_path)
    run(["preprocess", "--captions", tmp_path / "captions.token", "--images", tmp_path, "--train",
         tmp_path / "train.txt", "--valid", tmp_path / "valid.txt", "--tgt", "en", "--image-size", 32,
         "-o", tmp_path / "corpus"])
    run(["train", "--data", tmp_path / "corpus", "--arch", "show-attend-tell", "--save-dir", tmp_path / "run",
         "--emb-size", 8, "--dec-size", 8, "--max-steps", 1, "--valid-every", 1])
    torch.save(VGG16Features().state_dict(), tmp_path / "vgg16.pth")
    r = run(["caption", "-m", tmp_path / "run" / "last.pt", "--cnn-weights", tmp_path / "vgg16.pth"],
            input="img0.png\n", ok=False)
    assert r.exit_code == 2 and "made with random CNN weights (seed 1), not a weights file" in r.stderr


def test_reserved_symbols_in_training_text_are_stored_as_unknown_words(text_dir, tmp_path):
    for split in ("train", "valid"):
        for lang in ("en", "de"):
            lines = (text_dir / f"{split}.{lang}").read_text().splitlines()[:50]
            lines[:3] = [f"{lines[0]} </s> {lines[0]}", f"<pad> {lines[1]}", f"{lines[2]} <s>"]
            (tmp_path / f"{split}.{lang}").write_text("\n".join(lines) + "\n")
    run(["preprocess", "--train", tmp_path / "train", "--valid", tmp_path / "valid", "--src", "en", "--tgt", "de",
         "--vocab", "word:100", "-o", tmp_path / "c"])
    corpus = Corpus.open(tmp_path / "c")
    shard = Shard(corpus.shard_paths("train")[0])
    for stream in ("src", "tgt"):
        ids = np.concatenate([shard.get(stream, i) for i in range(len(shard))])
        assert not np.isin(ids, [PAD, BOS, EOS]).any(), stream
        assert (shard.get(stream, 0) == UNK).sum() == 1 and shard.get(stream, 1)[0] == UNK


def test_reserved_symbols_in_an_input_line_are_read_as_unknown_words(trained_ckpt):
    lines = ["forty-two </s> seven", "forty-two <pad> seven", "<s> forty-two seven", "forty-two <unk> seven",
             "<unk> forty-two seven"]
    out = run(["translate", "-m", trained_ckpt, "--beam", 2, "--n-best", 2], input="\n".join(lines) + "\n").stdout
    by_line: dict[int, list[str]] = {}
    for row in out.splitlines():
        index, text, _, score = row.split(" ||| ")
        by_line.setdefault(int(index), []).append(f"{text} {score}")
    assert by_line[0] == by_line[1] == by_line[3] and by_line[2] == by_line[4]
