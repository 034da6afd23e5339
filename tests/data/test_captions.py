"""Captioning corpora: caption files in both layouts, images to features (shared by an image's captions), held-out
splits with every reference, precomputed features, and one-line errors for bad images and files."""
import json

import numpy as np
import pytest

from nmtkit.data.captions import ImageSpec, preprocess_captions
from nmtkit.data.images import load_image, read_captions
from nmtkit.data.shards import Corpus, Shard
from nmtkit.data.verify import verify_corpus
from nmtkit.errors import NmtkitError
from tests.conftest import run

COLOURS = {"red": (220, 20, 20), "green": (20, 200, 20), "blue": (20, 20, 220)}


def write_images(folder, n=9):
    """n small pictures (a coloured square or disc), two captions each in Flickr30k's layout, and split lists."""
    from PIL import Image, ImageDraw

    lines, names = [], []
    for i in range(n):
        colour, shape = list(COLOURS)[i % 3], ("square", "disc")[i % 2]
        image = Image.new("RGB", (40, 40), (255, 255, 255))
        (ImageDraw.Draw(image).rectangle if shape == "square" else ImageDraw.Draw(image).ellipse)(
            [8, 8, 32, 32], fill=COLOURS[colour])
        names.append(f"img{i}.png")
        image.save(folder / names[-1])
        lines += [f"{names[-1]}#0\ta {colour} {shape}", f"{names[-1]}#1\t{colour} {shape} on white"]
    (folder / "captions.token").write_text("\n".join(lines) + "\n")
    for split, part in (("train", names[:5]), ("valid", names[5:7]), ("test", names[7:])):
        (folder / f"{split}.txt").write_text("\n".join(part) + "\n")
    return names


def write_features(folder, grid, size):
    """Random features ``[images, grid, size]`` of write_images' three splits, as ``SPLIT.npy`` in ``folder``."""
    arrays = {s: np.random.default_rng(0).standard_normal((n, grid, size)).astype(np.float16)
              for s, n in (("train", 5), ("valid", 2), ("test", 2))}
    for s, a in arrays.items():
        np.save(folder / f"{s}.npy", a)
    return arrays


SPEC = ImageSpec(size=32)  # a 2 x 2 grid of conv5_3 features: quick


def build(tmp_path, **kw):
    if not (tmp_path / "captions.token").exists():
        write_images(tmp_path)
    splits = {s: tmp_path / f"{s}.txt" for s in ("train", "valid", "test")}
    return preprocess_captions(tmp_path / "corpus", tmp_path / "captions.token", splits, "en", images=tmp_path,
                               spec=kw.pop("spec", SPEC), **kw)


def test_a_captioning_corpus(tmp_path):
    corpus = Corpus.open(build(tmp_path))
    verify_corpus(corpus)
    manifest = corpus.manifest
    assert manifest["streams"]["image"] == {"kind": "features", "lang": "", "size": 512}
    train = manifest["splits"]["train"]
    assert train["sentences"] == 10 and train["shards"][0]["rows"]["image"] == 5 * 4  # each image stored once
    shard = Shard(corpus.folder / train["shards"][0]["file"])
    assert np.array_equal(shard.get("image", 0), shard.get("image", 1)) and shard.get("image", 0).shape == (4, 512)
    assert corpus.tgt_vocab.decode(shard.get("tgt", 1).tolist()) == "red square on white"
    assert manifest["splits"]["valid"]["sentences"] == 2  # one example per image, its first caption the target
    valid = Shard(corpus.folder / manifest["splits"]["valid"]["shards"][0]["file"])
    assert [corpus.tgt_vocab.decode(valid.get("tgt", k).tolist()) for k in (0, 1)] == ["a blue disc", "a red square"]
    assert corpus.references("valid") == [["a blue disc", "a red square"],
                                          ["blue disc on white", "red square on white"]]
    assert (corpus.folder / "test.images").read_text().split("\n")[0] == str((tmp_path / "img7.png").resolve())
    assert manifest["options"]["images"]["size"] == 32 and manifest["options"]["images"]["weights"] is None


def test_captions_of_up_to_max_len_tokens_are_kept_and_images_named_relatively_are_listed_whole(tmp_path,
                                                                                                 monkeypatch):
    write_images(tmp_path)
    monkeypatch.chdir(tmp_path.parent)
    splits = {s: tmp_path / f"{s}.txt" for s in ("train", "valid", "test")}
    corpus = Corpus.open(preprocess_captions(tmp_path / "corpus", tmp_path / "captions.token", splits, "en",
                                             images=tmp_path.name, spec=SPEC, max_len=3))
    train = corpus.manifest["splits"]["train"]  # "a red square" (3 tokens) kept, "red square on white" dropped
    assert train["sentences"] == 5 and train["dropped"] == {"too_long": 5, "empty": 0}
    assert (corpus.folder / "test.images").read_text().split("\n")[0] == str((tmp_path / "img7.png").resolve())


def test_features_given_precomputed_are_stored_as_given(tmp_path):
    write_images(tmp_path)
    arrays = write_features(tmp_path, 3, 7)
    splits = {s: tmp_path / f"{s}.txt" for s in arrays}
    folder = preprocess_captions(tmp_path / "corpus", tmp_path / "captions.token", splits, "en",
                                 features={s: tmp_path / f"{s}.npy" for s in arrays})
    corpus = Corpus.open(folder)
    assert corpus.meta.streams["image"].size == 7
    shard = Shard(corpus.folder / corpus.manifest["splits"]["valid"]["shards"][0]["file"])
    assert np.array_equal(shard.get("image", 1), arrays["valid"][1])
    import h5py

    with h5py.File(tmp_path / "test.h5", "w") as f:
        f["features"] = arrays["test"]
    again = preprocess_captions(tmp_path / "corpus.h5", tmp_path / "captions.token", splits, "en",
                                features={"train": tmp_path / "train.npy", "valid": tmp_path / "valid.npy",
                                          "test": tmp_path / "test.h5"})
    shard = Shard(again / Corpus.open(again).manifest["splits"]["test"]["shards"][0]["file"])
    assert np.array_equal(shard.get("image", 0), arrays["test"][0])
    with h5py.File(tmp_path / "inf.h5", "w") as f:
        f["features"] = arrays["test"] * np.array([1, np.inf], np.float32)[:, None, None]
    with pytest.raises(NmtkitError, match=r"--features test=\S*inf.h5: the features of image 2 are not all finite"):
        preprocess_captions(tmp_path / "c1", tmp_path / "captions.token", splits, "en",
                            features={"train": tmp_path / "train.npy", "valid": tmp_path / "valid.npy",
                                      "test": tmp_path / "inf.h5"})
    assert not (tmp_path / "c1").exists()
    np.save(tmp_path / "grid.npy", np.concatenate([arrays["test"]] * 2, axis=1))  # (6 cells, where train has 3)
    with pytest.raises(NmtkitError, match=r"--features test=.*grid.npy: a grid of 6 cells, but another split has 3"):
        preprocess_captions(tmp_path / "c3", tmp_path / "captions.token", splits, "en",
                            features={"train": tmp_path / "train.npy", "valid": tmp_path / "valid.npy",
                                      "test": tmp_path / "grid.npy"})
    np.save(tmp_path / "wide.npy", np.zeros((5, 3, 512), np.float16))  # (VGG16's size)
    with pytest.raises(NmtkitError, match=r"--features train=.*wide.npy: a grid of 3 cells, but the CNN makes 4 "
                                          r"\(--image-size 32\)"):  # (the other splits' features made from images)
        preprocess_captions(tmp_path / "c4", tmp_path / "captions.token", splits, "en", images=tmp_path, spec=SPEC,
                            features={"train": tmp_path / "wide.npy"})
    assert not any((tmp_path / name).exists() for name in ("c3", "c4"))
    np.save(tmp_path / "short.npy", arrays["test"][:1])
    with pytest.raises(NmtkitError, match=r"--features test=.*short.npy: expected an array \[2 images, grid, D\]"):
        preprocess_captions(tmp_path / "c2", tmp_path / "captions.token", splits, "en",
                            features={"train": tmp_path / "train.npy", "valid": tmp_path / "valid.npy",
                                      "test": tmp_path / "short.npy"})


def test_caption_files_in_both_layouts_and_their_errors(tmp_path):
    (tmp_path / "a.tsv").write_text("x.jpg\ta dog\nx.jpg\ta brown dog\ny.jpg\tgrass\n")
    (tmp_path / "b.token").write_text("x.jpg#0\ta dog\nx.jpg#1\ta brown dog\ny.jpg#0\tgrass\n")
    expected = {"x.jpg": ["a dog", "a brown dog"], "y.jpg": ["grass"]}
    assert read_captions(tmp_path / "a.tsv") == read_captions(tmp_path / "b.token") == expected
    (tmp_path / "bad.tsv").write_text("x.jpg\ta dog\nno tab here\n")
    with pytest.raises(NmtkitError, match=r"bad.tsv:2: expected IMAGE<TAB>caption"):
        read_captions(tmp_path / "bad.tsv")


def test_bad_images_stop_with_their_name_or_are_skipped_and_counted(tmp_path):
    names = write_images(tmp_path)
    (tmp_path / names[1]).write_bytes(b"not a png")
    with pytest.raises(NmtkitError, match=r"img1.png: cannot read the image"):
        build(tmp_path)
    folder = build(tmp_path, spec=ImageSpec(size=32, skip_bad=True), overwrite=True)
    train = json.loads((folder / "manifest.json").read_text())["splits"]["train"]
    assert train["skipped_images"] == 1 and train["sentences"] == 8
    with pytest.raises(NmtkitError, match="absent.png: no such image"):
        load_image(tmp_path / "absent.png", 32)
    (tmp_path / "valid.txt").write_text("img5.png\nunknown.png\n")
    with pytest.raises(NmtkitError, match=r"valid.txt: image 'unknown.png' has no caption"):
        preprocess_captions(tmp_path / "c3", tmp_path / "captions.token",
                            {s: tmp_path / f"{s}.txt" for s in ("train", "valid")}, "en", images=tmp_path, spec=SPEC)


def test_the_cli_builds_a_captioning_corpus_and_refuses_text_options(tmp_path):
    write_images(tmp_path)
    args = ["preprocess", "--captions", tmp_path / "captions.token", "--images", tmp_path, "--train",
            tmp_path / "train.txt", "--valid", tmp_path / "valid.txt", "--tgt", "en", "--image-size", 32]
    run(args + ["-o", tmp_path / "corpus"])
    assert Corpus.open(tmp_path / "corpus").manifest["splits"]["train"]["sentences"] == 10
    r = run(args + ["--src", "en", "-o", tmp_path / "c2"], ok=False)
    assert "--src and --src-vocab are for text" in r.stderr
    r = run(["preprocess", "--train", "x", "--valid", "y", "--tgt", "de", "-o", tmp_path / "c3"], ok=False)
    assert "--src: give the source suffix" in r.stderr
