"""Verification of a corpus folder: each kind of damage is found and named, before any training."""
from __future__ import annotations

import json
import shutil

import h5py
import pytest

from nmtkit.data.captions import preprocess_captions
from nmtkit.data.manifest import file_record
from nmtkit.data.shards import Corpus
from nmtkit.data.verify import verify_corpus
from nmtkit.errors import NmtkitError
from tests.data.test_captions import write_features, write_images


@pytest.fixture
def corpus(corpus_dir, tmp_path):
    """A private copy of the tiny corpus, to damage."""
    return shutil.copytree(corpus_dir, tmp_path / "c")


def edit_manifest(folder, change):
    manifest = json.loads((folder / "manifest.json").read_text())
    change(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def restamp(folder, name):
    """Record a changed file's new size and checksum, as a buggy writer would have: the deeper checks must still
    find what is wrong inside it."""
    edit_manifest(folder, lambda m: "files" in m and m["files"].__setitem__(name, file_record(folder / name)))


def check(folder):
    return verify_corpus(Corpus.open(folder))


def test_an_intact_corpus_passes_with_its_checksums(corpus):
    checked = check(corpus)
    assert checked.checksums and checked.files == 9
    assert checked.examples == {"train": 2000, "valid": 40, "test": 30}


@pytest.mark.parametrize("change,message", [
    (lambda m: m["splits"]["train"]["shards"][0].pop("sentences"), "'splits.train.shards[0].sentences' is missing"),
    (lambda m: m["streams"].pop("tgt"), "'streams.tgt' is missing"),
    (lambda m: m["splits"].pop("valid"), "'splits.valid' is missing"),
    (lambda m: m["streams"]["src"].update(size="105"), "'streams.src.size' should be int, not '105'"),
    (lambda m: m["splits"]["valid"].pop("reference"), "'splits.valid.reference' is missing"),
    (lambda m: m["splits"]["train"].update(sentences=1999), "'splits.train.sentences' is not the sum"),
    (lambda m: m["files"]["train.000.h5"].pop("sha256"), "'files.train.000.h5.sha256' is missing"),
    (lambda m: m.pop("format"), "unsupported corpus format None"),
    (lambda m: m["splits"]["valid"].update(reference="../../etc/passwd"),
     "'splits.valid.reference' should name a file of the corpus folder, not '../../etc/passwd'"),
    (lambda m: m["splits"]["valid"].update(inputs=["valid.en"]), "'splits.valid.inputs' should be dict, not"),
    (lambda m: m["streams"].update(src="en"), "'streams.src' should be a mapping, not 'en'"),
    (lambda m: m["splits"]["train"]["shards"][0].update(rows=[1, 2]), "'splits.train.shards[0].rows' should be dict"),
])
def test_a_manifest_without_its_keys_is_named(corpus, change, message):
    edit_manifest(corpus, change)
    with pytest.raises(NmtkitError, match=f"manifest.json: {message}".replace("[", r"\[").replace("]", r"\]")):
        check(corpus)


def test_a_missing_file_is_named(corpus):
    (corpus / "valid.de").unlink()
    with pytest.raises(NmtkitError, match=r"valid.de: missing \(the corpus' manifest.json names it\)"):
        check(corpus)


def test_a_file_cut_short_is_named_with_both_sizes(corpus):
    vocab = corpus / "vocab.tgt.txt"
    vocab.write_text("\n".join(vocab.read_text().splitlines()[:20]) + "\n")
    with pytest.raises(NmtkitError, match=r"vocab.tgt.txt: \d+ bytes, but the manifest recorded 240"):
        check(corpus)


def test_a_changed_byte_is_found_by_the_checksum(corpus):
    data = bytearray((corpus / "train.000.h5").read_bytes())
    data[-100] ^= 0xFF
    (corpus / "train.000.h5").write_bytes(data)
    with pytest.raises(NmtkitError, match="train.000.h5: its SHA-256 differs"):
        check(corpus)


def damage_shard(folder, name, stream, dataset, change):
    with h5py.File(folder / name, "a") as f:
        values = f[stream][dataset][()]
        change(values)
        f[stream][dataset][...] = values
    restamp(folder, name)


def test_offsets_that_decrease_are_found(corpus):
    damage_shard(corpus, "train.000.h5", "src", "offsets", lambda o: o.__setitem__(7, o[7] + 100))
    with pytest.raises(NmtkitError, match="train.000.h5: stream 'src': offsets decrease at example 7"):
        check(corpus)


def test_offsets_beyond_the_data_are_found(corpus):
    damage_shard(corpus, "valid.000.h5", "tgt", "offsets", lambda o: o.__setitem__(-1, o[-1] + 1))
    with pytest.raises(NmtkitError, match="valid.000.h5: stream 'tgt': the offsets end at 243 but the data has 242"):
        check(corpus)


def test_token_ids_outside_the_vocabulary_are_found(corpus):
    damage_shard(corpus, "train.000.h5", "tgt", "tokens", lambda t: t.__setitem__(5, 35))
    with pytest.raises(NmtkitError, match=r"train.000.h5: stream 'tgt' holds token id 35 outside its vocabulary of 35"):
        check(corpus)


def test_a_truncated_vocabulary_is_found_even_with_its_checksum_recorded(corpus):
    vocab = corpus / "vocab.tgt.txt"
    vocab.write_text("\n".join(vocab.read_text().splitlines()[:20]) + "\n")
    restamp(corpus, "vocab.tgt.txt")
    with pytest.raises(NmtkitError, match="vocab.tgt.txt: 20 entries, but the manifest says 35 for stream 'tgt'"):
        check(corpus)


def test_a_corpus_without_checksums_gets_the_structural_checks(corpus):
    edit_manifest(corpus, lambda m: m.pop("files"))
    assert not check(corpus).checksums
    damage_shard(corpus, "train.000.h5", "src", "offsets", lambda o: o.__setitem__(0, 1))
    with pytest.raises(NmtkitError, match="train.000.h5: stream 'src': the first offset is not 0"):
        check(corpus)


@pytest.mark.parametrize("name", ["valid.de", "valid.en"])
def test_held_out_text_of_another_length_is_named(corpus, name):
    """(Without checksums a validation reference cut short was scored against as many hypotheses: sacrebleu pairs
    the lines it has and drops the rest.)"""
    edit_manifest(corpus, lambda m: m.pop("files"))
    text = corpus / name
    text.write_text("".join(text.read_text().splitlines(keepends=True)[:5]))
    with pytest.raises(NmtkitError, match=f"{name}: 5 lines, but the valid split holds 40 examples"):
        check(corpus)


def test_a_shard_listed_twice_is_named(corpus):
    """(Its file intact: every size and checksum holds.)"""
    first = json.loads((corpus / "manifest.json").read_text())["splits"]["train"]["shards"][0]["file"]
    edit_manifest(corpus, lambda m: m["splits"]["valid"]["shards"][0].update(file=first))
    with pytest.raises(NmtkitError, match=f"manifest.json: lists the shard {first} twice"):
        check(corpus)


def test_an_item_index_past_the_items_is_found(tmp_path):
    """(a captioning corpus: an image's features stored once, its captions' examples pointing at them)"""
    write_images(tmp_path)
    arrays = write_features(tmp_path, 3, 7)
    folder = preprocess_captions(tmp_path / "caps", tmp_path / "captions.token",
                                 {s: tmp_path / f"{s}.txt" for s in arrays}, "en",
                                 features={s: tmp_path / f"{s}.npy" for s in arrays})
    with h5py.File(folder / "train.000.h5", "r") as f:
        items = len(f["image"]["offsets"]) - 1
    damage_shard(folder, "train.000.h5", "image", "index", lambda index: index.__setitem__(0, items))
    with pytest.raises(NmtkitError, match=f"stream 'image': an example's item index lies outside its {items} items"):
        check(folder)
