"""Multimodal translation corpora: an image list line-aligned with the text becomes the feature stream ``image``
(the CNN's features of each line's image, shared by consecutive lines naming one image), or features are given
precomputed; held-out splits keep the list with absolute paths; one-line errors for bad lists and images."""
import json

import numpy as np
import pytest
import torch

from nmtkit.data.batching import example_lengths
from nmtkit.data.images import ImageSpec, load_image
from nmtkit.data.preprocess import SourceImages, VocabSpec, preprocess
from nmtkit.data.shards import Corpus, Shard
from nmtkit.data.verify import verify_corpus
from nmtkit.errors import NmtkitError
from tests.data.test_captions import write_images

SPEC = ImageSpec(size=32)  # a 2 x 2 grid of conv5_3 features: quick
WORDS = VocabSpec("word", 50)
ROWS = {  # (en, de, image): consecutive lines of train share img0 and img2; img1 comes back after img2
    "train": [("a red square", "ein rotes quadrat", "img0.png"), ("the red square", "das rote quadrat", "img0.png"),
              ("a green disc", "eine grüne scheibe", "img1.png"), ("a blue square", "ein blaues quadrat", "img2.png"),
              ("the blue square", "das blaue quadrat", "img2.png"), ("the green disc", "die grüne scheibe", "img1.png")],
    "valid": [("a red disc", "eine rote scheibe", "img3.png"), ("a green square", "ein grünes quadrat", "img4.png")],
    "test": [("a blue disc", "eine blaue scheibe", "img5.png"), ("a red square", "ein rotes quadrat", "ABSOLUTE")],
}


def write_multimodal(folder):
    """write_images' pictures and, per split, PREFIX.en, PREFIX.de and the image list PREFIX.img (the last test
    line names its image by an absolute path); the split prefixes."""
    write_images(folder, n=7)
    for split, rows in ROWS.items():
        for k, suffix in enumerate(("en", "de", "img")):
            lines = [str(folder / "img6.png") if r[k] == "ABSOLUTE" else r[k] for r in rows]
            (folder / f"{split}.{suffix}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return [folder / split for split in ROWS]


def trained_multimodal(root, *options, model=None):
    """write_multimodal's corpus preprocessed (a VGG16 at 32 px, random weights) into ``root/data``, and a tiny
    model (``model``: its --arch and size options; default a multi-source RNN) trained on it with ``options``
    (--max-steps ...) into ``root/run``; ``root``."""
    from tests.conftest import TINY_MODEL, run

    write_multimodal(root)
    run(["preprocess", "--train", root / "train", "--valid", root / "valid", "--test", root / "test", "--src", "en",
         "--tgt", "de", "--src-images", "img", "--images", root, "--image-size", 32, "--vocab", "word:50",
         "-o", root / "data"])
    model = ["--arch", "multi-source", *TINY_MODEL] if model is None else model
    run(["train", "--data", root / "data", "--save-dir", root / "run", *model, "--batch-size", 2, *options])
    return root


def build(tmp_path, out="corpus", spec=SPEC, folder=None, **kw):
    prefixes = write_multimodal(tmp_path) if not (tmp_path / "train.img").exists() else [tmp_path / s for s in ROWS]
    images = SourceImages("img", folder or tmp_path, spec, kw.pop("features", {}))
    return preprocess(tmp_path / out, "en", "de", *prefixes, vocab=WORDS, images=images, **kw)


def cnn_features(path):
    """The features SPEC's network makes of one image on its own, stored as float16."""
    with torch.inference_mode():
        return SPEC.network()(load_image(path, SPEC.size)[None])[0].half()


def shard_of(corpus, split):
    return Shard(corpus.folder / corpus.manifest["splits"][split]["shards"][0]["file"])


def test_a_multimodal_corpus(tmp_path, monkeypatch):
    """The image stream holds the CNN's features of each line's image, stored once for consecutive lines naming the
    same image; the manifest records how they were made; held-out splits keep the list with absolute paths (the
    images' folder given relative to the current one); the length filter ignores the image's grid; check-corpus
    passes."""
    monkeypatch.chdir(tmp_path.parent)
    corpus = Corpus.open(build(tmp_path, folder=tmp_path.name, max_len=3))
    assert verify_corpus(corpus).examples == {"train": 6, "valid": 2, "test": 2}
    manifest = corpus.manifest
    assert list(manifest["streams"]) == ["src", "image", "tgt"]  # a model's encoders: the text, then the image
    assert manifest["streams"]["image"] == {"kind": "features", "lang": "img", "size": 512}
    assert manifest["options"]["images"] == SPEC.record() and manifest["options"]["features"] == {}
    train = shard_of(corpus, "train")
    assert manifest["splits"]["train"]["shards"][0]["rows"]["image"] == 4 * 4  # runs img0, img1, img2, img1
    assert list(train.index["image"]) == [0, 0, 1, 2, 2, 3]
    for split, rows in ROWS.items():
        shard = shard_of(corpus, split)
        for i, (en, _, name) in enumerate(rows):
            assert corpus.vocabs["src"].decode(shard.get("src", i).tolist()) == en
            image = tmp_path / ("img6.png" if name == "ABSOLUTE" else name)
            torch.testing.assert_close(torch.from_numpy(shard.get("image", i)), cnn_features(image))
    assert not np.array_equal(train.get("image", 0), train.get("image", 2))  # different pictures, different features
    assert list(example_lengths(train)) == [4] * 6  # the longest text stream + </s>: a 4-row image does not count
    test = manifest["splits"]["test"]
    assert test["reference"] == "test.de" and test["inputs"] == {"src": "test.en", "image": "test.img"}
    assert (corpus.folder / "test.img").read_text().splitlines() == [str((tmp_path / n).resolve())
                                                                     for n in ("img5.png", "img6.png")]
    assert (corpus.folder / "test.en").read_text() == (tmp_path / "test.en").read_text()


def test_a_long_line_is_dropped_by_its_text_alone(tmp_path):
    write_multimodal(tmp_path)
    (tmp_path / "train.en").write_text("a red square\nthe red square is red\na\nb\nc\nd\n")
    manifest = json.loads((build(tmp_path, max_len=3) / "manifest.json").read_text())
    assert manifest["splits"]["train"]["dropped"] == {"too_long": 1, "empty": 0, "bad_images": 0}
    assert manifest["splits"]["train"]["shards"][0]["rows"]["image"] == 4 * 4  # img0 stored once still


def test_an_image_list_of_another_length_is_refused_before_anything_is_written(tmp_path):
    write_multimodal(tmp_path)
    (tmp_path / "valid.img").write_text("img3.png\n")
    with pytest.raises(NmtkitError, match=r"valid\.en has 2 lines but .*valid\.img has 1"):
        build(tmp_path)
    assert not (tmp_path / "corpus").exists()
    with pytest.raises(NmtkitError, match="--src-images 'en': give the image lists a suffix of their own") as e:
        preprocess(tmp_path / "c", "en", "de", tmp_path / "train", tmp_path / "valid", images=SourceImages("en"))
    assert e.value.exit_code == 2


def test_an_empty_line_of_an_image_list_names_the_folder_as_not_an_image(tmp_path):
    """(The folder --images names, which an empty line resolves to: "cannot read the image ([Errno 21] ...)".)"""
    write_multimodal(tmp_path)
    lines = (tmp_path / "train.img").read_text().splitlines()
    (tmp_path / "train.img").write_text("\n".join(lines[:2] + [""] + lines[3:]) + "\n")
    with pytest.raises(NmtkitError, match=rf"^\S*train\.img:3: {tmp_path}: a folder, not an image$"):
        build(tmp_path)


def test_a_missing_image_names_its_line_or_drops_the_training_example(tmp_path):
    write_multimodal(tmp_path)
    (tmp_path / "img1.png").unlink()  # lines 3 and 6 of train
    with pytest.raises(NmtkitError, match=r"^\S*train\.img:3: \S*img1\.png: no such image$"):
        build(tmp_path)
    assert not (tmp_path / "corpus").exists()
    skipping = ImageSpec(size=32, skip_bad=True)
    corpus = Corpus.open(build(tmp_path, spec=skipping))
    train = corpus.manifest["splits"]["train"]
    assert train["dropped"] == {"too_long": 0, "empty": 0, "bad_images": 2} and train["sentences"] == 4
    shard = shard_of(corpus, "train")
    assert [corpus.vocabs["src"].decode(shard.get("src", i).tolist()) for i in range(4)] == [
        "a red square", "the red square", "a blue square", "the blue square"]
    torch.testing.assert_close(torch.from_numpy(shard.get("image", 2)), cnn_features(tmp_path / "img2.png"))
    verify_corpus(corpus)
    (tmp_path / "img4.png").write_bytes(b"not a png")  # valid line 2: held out, never dropped
    with pytest.raises(NmtkitError, match=r"valid\.img:2: \S*img4\.png: cannot read the image .*--skip-bad-images "
                                          r"drops training examples only"):
        build(tmp_path, out="c2", spec=skipping)
    assert not (tmp_path / "c2").exists()


def test_precomputed_features_per_line(tmp_path):
    """--features SPLIT=FILE: the rows stored as given, no image list read (nor kept), no CNN record; a file of
    another length or size is refused before anything is written."""
    write_multimodal(tmp_path)
    arrays = {s: np.random.default_rng(k).standard_normal((len(rows), 3, 7)).astype(np.float16)
              for k, (s, rows) in enumerate(ROWS.items())}
    for split, array in arrays.items():
        np.save(tmp_path / f"{split}.npy", array)
        (tmp_path / f"{split}.img").unlink()
    given = {s: tmp_path / f"{s}.npy" for s in arrays}
    corpus = Corpus.open(preprocess(tmp_path / "corpus", "en", "de", *[tmp_path / s for s in ROWS], vocab=WORDS,
                                    images=SourceImages("img", features=given)))
    verify_corpus(corpus)
    assert corpus.manifest["streams"]["image"]["size"] == 7 and corpus.manifest["options"]["images"] is None
    assert corpus.manifest["options"]["features"] == {s: str(f) for s, f in given.items()}
    for split, array in arrays.items():
        shard = shard_of(corpus, split)
        assert all(np.array_equal(shard.get("image", i), array[i]) for i in range(len(array)))
    assert corpus.manifest["splits"]["test"]["inputs"] == {"src": "test.en"}
    np.save(tmp_path / "short.npy", arrays["valid"][:1])
    with pytest.raises(NmtkitError, match=r"--features valid=\S*short\.npy: expected an array \[2 lines, grid, D\]"):
        preprocess(tmp_path / "c2", "en", "de", *[tmp_path / s for s in ROWS], vocab=WORDS,
                   images=SourceImages("img", features={**given, "valid": tmp_path / "short.npy"}))
    write_multimodal(tmp_path)  # lists again: valid and test from images, train given (of size 7, not 512)
    with pytest.raises(NmtkitError, match=r"--features train=\S*train\.npy: features of size 7, but the CNN makes "
                                          "size 512"):
        preprocess(tmp_path / "c2", "en", "de", *[tmp_path / s for s in ROWS], vocab=WORDS,
                   images=SourceImages("img", tmp_path, SPEC, {"train": given["train"]}))
    assert not (tmp_path / "c2").exists()
