"""nmtkit preprocess end to end and its bad inputs."""
import json

import numpy as np

from nmtkit.data.vocab import SPM_SAMPLE, UNK, load_vocab
from tests.conftest import run


def test_preprocess_spm_with_test_split(text_dir, tmp_path):
    r = run(["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--test", text_dir / "test",
             "--src", "en", "--tgt", "de", "--vocab", "spm:60", "--max-len", 12, "-o", tmp_path / "c"])
    m = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert set(m["splits"]) == {"train", "valid", "test"} and m["streams"]["src"]["vocab_kind"] == "spm"
    assert m["splits"]["train"]["sentences"] + m["splits"]["train"]["dropped"]["too_long"] == 2000
    assert "dropped" in r.stderr and (tmp_path / "c" / "vocab.src.model").exists()
    assert m["options"]["shard_size"] == 100_000 and m["options"]["max_len"] == 12  # (the default, and as given)


def test_character_coverage(text_dir, tmp_path):
    """A character seen once in the training text is <unk> at SentencePiece's default coverage, a piece at 1.0; a
    coverage SentencePiece refuses is a one-line error naming the option."""
    for lang in ("en", "de"):
        (tmp_path / f"t.{lang}").write_text((text_dir / f"train.{lang}").read_text() + "ŋ\n")
    base = ["preprocess", "--train", tmp_path / "t", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
            "--vocab", "spm:60"]
    for coverage, unknown in ((None, True), (1.0, False)):
        out = tmp_path / f"c{coverage}"
        run([*base, "-o", out, *(["--character-coverage", coverage] if coverage else [])])
        assert (UNK in load_vocab(out / "vocab.src.model").encode("ŋ")) == unknown
    r = run([*base, "-o", tmp_path / "bad", "--character-coverage", 0.9], ok=False)
    assert r.exit_code == 2 and "--character-coverage:" in r.stderr and not (tmp_path / "bad").exists()
    r = run([*base[:-1], "word:50", "-o", tmp_path / "bad", "--character-coverage", 1.0], ok=False)
    assert r.exit_code == 2 and "--character-coverage goes with a SentencePiece vocabulary" in r.stderr


def test_spm_sample_bounds_the_lines_sentencepiece_reads(text_dir, tmp_path, monkeypatch):
    import sentencepiece

    asked = []
    train = sentencepiece.SentencePieceTrainer.train
    monkeypatch.setattr(sentencepiece.SentencePieceTrainer, "train",
                        lambda **kw: asked.append(kw["input_sentence_size"]) or train(**kw))
    base = ["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
            "--vocab", "spm:60"]
    run([*base, "-o", tmp_path / "a"])
    run([*base, "-o", tmp_path / "b", "--spm-sample", 1500])
    assert asked == [SPM_SAMPLE, 1500]
    r = run([*base[:-1], "word:50", "-o", tmp_path / "bad", "--spm-sample", 1500], ok=False)
    assert r.exit_code == 2 and "--spm-sample goes with a SentencePiece vocabulary built here" in r.stderr
    r = run([*base, "-o", tmp_path / "bad", "--spm-sample", 10], ok=False)
    assert r.exit_code == 2 and "--spm-sample" in r.stderr and not (tmp_path / "bad").exists()


def test_mismatched_line_counts(text_dir, tmp_path):
    (tmp_path / "t.en").write_text("a\nb\nc\n")
    (tmp_path / "t.de").write_text("a\nb\n")
    r = run(["preprocess", "--train", tmp_path / "t", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
             "-o", tmp_path / "c"], ok=False)
    assert r.exit_code == 1
    assert "t.en has 3 lines but" in r.stderr and "t.de has 2" in r.stderr
    assert not (tmp_path / "c").exists()


def test_invalid_utf8_names_the_line(text_dir, tmp_path):
    (tmp_path / "t.en").write_bytes(b"a\nb\xff\n")
    (tmp_path / "t.de").write_text("a\nb\n")
    r = run(["preprocess", "--train", tmp_path / "t", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
             "--vocab", "word:10", "-o", tmp_path / "c"], ok=False)
    assert "t.en:2: invalid UTF-8" in r.stderr
    assert not (tmp_path / "c").exists()


def test_empty_missing_and_existing(text_dir, tmp_path):
    (tmp_path / "e.en").write_text("")
    (tmp_path / "e.de").write_text("")
    base = ["--valid", text_dir / "valid", "--src", "en", "--tgt", "de", "--vocab", "word:50"]
    r = run(["preprocess", "--train", tmp_path / "e", *base, "-o", tmp_path / "c"], ok=False)
    assert "e.en: file is empty" in r.stderr
    r = run(["preprocess", "--train", tmp_path / "missing", *base, "-o", tmp_path / "c"], ok=False)
    assert "missing.en: no such file" in r.stderr
    run(["preprocess", "--train", text_dir / "train", *base, "-o", tmp_path / "c"])
    r = run(["preprocess", "--train", text_dir / "train", *base, "-o", tmp_path / "c"], ok=False)
    assert "already holds a corpus folder; use --overwrite" in r.stderr
    run(["preprocess", "--train", text_dir / "train", *base, "-o", tmp_path / "c", "--overwrite"])
    r = run(["preprocess", "--train", text_dir / "train", *base, "-o", "/proc/nmtkit-test/c"], ok=False)
    assert r.exit_code == 2 and r.stderr.startswith("error: -o /proc/nmtkit-test/c: cannot write in /proc (")


def test_bad_vocab_option(text_dir, tmp_path):
    r = run(["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
             "--vocab", "bpe", "-o", tmp_path / "c"], ok=False)
    assert r.exit_code == 2 and "--vocab: expected KIND:SIZE" in r.stderr
    (tmp_path / "v.txt").write_text("one\ntwo\n")
    both = ["--src-vocab", tmp_path / "v.txt", "--tgt-vocab", tmp_path / "v.txt"]
    r = run(["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
             "--vocab", "spm:100", *both, "-o", tmp_path / "c"], ok=False)
    assert r.exit_code == 2 and r.stderr == ("error: --vocab: builds a vocabulary, but --src-vocab and --tgt-vocab give "
                                             "every one; leave --vocab out\n")
    r = run(["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
             "--src-vocab", text_dir / "train.en", "--tgt-vocab", tmp_path / "v.txt", "-o", tmp_path / "c"], ok=False)
    assert r.exit_code == 1 and r.stderr.startswith(f"error: {text_dir / 'train.en'}:1: ") and "is not one word" in r.stderr
    assert not (tmp_path / "c").exists()


def _ape_files(tmp_path):
    for split in ("train", "valid"):
        for ext, line in (("src", "a b"), ("mt", "x y"), ("pe", "x z")):
            (tmp_path / f"{split}.{ext}").write_text(f"{line}\n" * 3)
    return ["preprocess", "--train", tmp_path / "train", "--valid", tmp_path / "valid", "--tgt", "pe",
            "-o", tmp_path / "c"]


def test_ape_edits(tmp_path):
    base = _ape_files(tmp_path)
    run([*base, "--src", "src", "--src", "mt", "--ape-edits", "mt", "--vocab", "word:20"])
    m = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert m["options"]["ape_edits"] == "mt" and (tmp_path / "c" / "valid.pe").read_text() == "x z\n" * 3


def test_bad_ape_edits(tmp_path):
    base = [*_ape_files(tmp_path), "--vocab", "word:20"]
    for args, message in (
        (["--src", "src", "--src", "mt", "--ape-edits", "hyp"], "--ape-edits 'hyp': name the source stream holding "
                                                                "the MT output, beside at least one other source "
                                                                "(sources: src, mt)"),
        (["--src", "mt", "--ape-edits", "src"], "--ape-edits 'src': name the source stream"),
        (["--src", "src", "--src", "mt", "--ape-edits", "mt", "--vocab", "spm:20"], "need a word vocabulary: use "
                                                                                    "--vocab word:N"),
    ):
        r = run([*base, *args], ok=False)
        assert r.exit_code == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not (tmp_path / "c").exists()


def _multimodal(tmp_path):
    from tests.data.test_multimodal import write_multimodal

    train, valid, test = write_multimodal(tmp_path)
    return ["preprocess", "--train", train, "--valid", valid, "--test", test, "--src", "en", "--tgt", "de",
            "--vocab", "word:50", "--image-size", 32, "--device", "cpu", "-o", tmp_path / "c"]


def test_multimodal_corpus_and_check_corpus(tmp_path):
    run([*_multimodal(tmp_path), "--src-images", "img", "--images", tmp_path])
    m = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert m["streams"]["image"]["kind"] == "features" and m["options"]["images"]["size"] == 32
    assert m["splits"]["test"]["inputs"] == {"src": "test.en", "image": "test.img"}
    out = run(["check-corpus", tmp_path / "c"]).stdout  # 2 vocabularies, 3 shards, valid and test: .en .de .img
    assert ": ok: 11 files" in out and "6 train, 2 valid, 2 test examples" in out


def test_bad_multimodal_input(tmp_path):
    base = _multimodal(tmp_path)
    (tmp_path / "img3.png").unlink()  # line 1 of valid
    for args, message, code in (
        (["--src-images", "img"], "--images: give the folder of the images", 2),
        (["--images", tmp_path], "--images and --features go with --src-images", 2),
        (["--src-images", "img", "--images", tmp_path, "--image-size", 15], "--image-size: expects an integer >= 16, "
                                                                               "got '15'", 2),  # (VGG16's least)
        (["--src-images", "img", "--images", tmp_path, "--skip-bad-images"], "valid.img:1: ", 1),
    ):
        r = run([*base, *args], ok=False)
        error = r.stderr.strip().splitlines()[-1]  # after the vocabulary's warnings and the training split's line
        assert r.exit_code == code and error.startswith("error: ") and message in error, r.stderr
        assert not (tmp_path / "c").exists()
    cnn = "--image-size: goes with images that preprocess makes features of (--captions or --src-images, a split " \
          "without --features)"  # (the CNN's options, where it makes no features: base gives --image-size 32)
    r = run(base, ok=False)
    assert r.exit_code == 2 and r.stderr == f"error: {cnn}\n"
    every = []
    for split in ("train", "valid", "test"):
        np.save(tmp_path / f"{split}.npy", np.zeros((len((tmp_path / f"{split}.en").read_text().splitlines()), 4, 8),
                                                    np.float32))
        every += ["--features", f"{split}={tmp_path / split}.npy"]
    r = run([*base, "--src-images", "img", *every], ok=False)
    assert r.exit_code == 2 and r.stderr == f"error: {cnn}\n" and not (tmp_path / "c").exists()
    (tmp_path / "train.img").write_text("img0.png\n")
    r = run([*base, "--src-images", "img", "--images", tmp_path], ok=False)
    assert "train.en has 6 lines but" in r.stderr and "train.img has 1" in r.stderr
