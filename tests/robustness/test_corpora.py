"""train on damaged or incomplete corpora: one line naming the file, exit 1, before the first update (nothing is
written to the run's folder); preprocess warns about a vocabulary far smaller than asked."""
from __future__ import annotations

import json
import shutil

import h5py
import pytest

from tests.conftest import TINY_MODEL, run


def _offsets(folder):
    with h5py.File(folder / "train.000.h5", "a") as f:
        f["src"]["offsets"][3] = 10**6


def _manifest_key(folder):
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["splits"]["train"]["shards"][0]["file"]
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _vocabulary(folder):
    lines = (folder / "vocab.tgt.txt").read_text().splitlines()
    (folder / "vocab.tgt.txt").write_text("\n".join(lines[:10]) + "\n")


@pytest.mark.parametrize("damage,message", [
    (_offsets, "train.000.h5: its SHA-256 differs from the one the manifest recorded"),
    (_manifest_key, "manifest.json: 'splits.train.shards[0].file' is missing"),
    (_vocabulary, "vocab.tgt.txt: 55 bytes, but the manifest recorded 240"),
    (lambda folder: (folder / "valid.de").unlink(), "valid.de: missing (the corpus' manifest.json names it)"),
], ids=["offsets", "manifest-key", "vocabulary", "reference"])
def test_training_on_a_damaged_corpus_stops_before_the_first_update(corpus_dir, tmp_path, damage, message):
    corpus = shutil.copytree(corpus_dir, tmp_path / "c")
    damage(corpus)
    r = run(["train", "--data", corpus, "--save-dir", tmp_path / "run", *TINY_MODEL, "--max-steps", 2], ok=False)
    assert r.exit_code == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("error: ") and message in r.stderr
    assert not (tmp_path / "run").exists()


def test_a_vocabulary_far_smaller_than_asked_is_a_warning_with_both_numbers(text_dir, tmp_path):
    r = run(["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
             "--vocab", "word:100000", "-o", tmp_path / "c"])
    assert "warning: the vocabulary of src has 105 entries, far fewer than the 100,000 asked by --vocab word:100000" \
        in " ".join(r.stderr.split())
    r = run(["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
             "--vocab", "word:30", "-o", tmp_path / "d"])
    assert "warning" not in r.stderr
