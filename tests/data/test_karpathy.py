"""Karpathy's split files to the caption list and split lists `preprocess --captions` reads (the Flickr30k recipe
runs it end to end: tests/recipes/test_flickr30k.py)."""
import json

from nmtkit.data.karpathy import karpathy_split


def test_captions_are_one_clean_line_each_and_empty_ones_are_left_out(tmp_path):
    data = {"images": [
        {"filename": "a.jpg", "split": "train", "sentences": [{"tokens": ["a", "dog"], "raw": "A dog."},
                                                              {"tokens": [], "raw": "A dog\truns\n  fast "},
                                                              {"tokens": [], "raw": "   "}]},
        {"filename": "b.jpg", "split": "restval", "sentences": [{"tokens": ["two", "cats"]}]},
        {"filename": "c.jpg", "split": "val", "sentences": [{"raw": "a bird"}]}]}
    (tmp_path / "d.json").write_text(json.dumps(data))
    counts = karpathy_split(tmp_path / "d.json", tmp_path / "out")
    assert counts == {"train": 2, "dev": 1, "test": 0}
    assert (tmp_path / "out" / "captions.tsv").read_text().splitlines() == [
        "a.jpg\ta dog", "a.jpg\tA dog runs fast", "b.jpg\ttwo cats", "c.jpg\ta bird"]
    assert (tmp_path / "out" / "train.txt").read_text() == "a.jpg\nb.jpg\n"
