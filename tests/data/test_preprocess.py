import json

import h5py
import pytest
import torch

from nmtkit.data.batching import TrainingBatches
from nmtkit.data.edits import DELETE, KEEP, apply_edits, edit_operations
from nmtkit.data.folders import MARKER
from nmtkit.data.preprocess import VocabSpec, preprocess
from nmtkit.data.shards import Corpus, Shard
from nmtkit.data.verify import verify_corpus
from nmtkit.data.vocab import UNK
from nmtkit.errors import NmtkitError


def _write(tmp_path, name, lines_src, lines_tgt):
    (tmp_path / f"{name}.en").write_text("".join(l + "\n" for l in lines_src), encoding="utf-8")
    (tmp_path / f"{name}.de").write_text("".join(l + "\n" for l in lines_tgt), encoding="utf-8")
    return tmp_path / name


def _pairs(tmp_path):
    train = _write(tmp_path, "train", ["a b c", "b c", "c d e f g h", "", "a"], ["x y", "y", "z z z z z z z", "x", "x"])
    valid = _write(tmp_path, "valid", ["a b", ""], ["x", "y"])
    return train, valid


def test_length_filter_and_empty_pairs_are_counted(tmp_path):
    train, valid = _pairs(tmp_path)
    out = preprocess(tmp_path / "c", "en", "de", train, valid, vocab=VocabSpec("word", 50), max_len=5)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["splits"]["train"]["dropped"] == {"too_long": 1, "empty": 1}
    assert manifest["splits"]["train"]["sentences"] == 3
    assert manifest["splits"]["valid"]["sentences"] == 2  # held-out sets are kept whole
    corpus = Corpus.open(out)
    shard = Shard(corpus.shard_paths("train")[0])
    assert corpus.vocabs["src"].decode(shard.get("src", 0).tolist()) == "a b c"
    assert corpus.reference_path("valid").read_text() == "x\ny\n"


def test_no_example_left_says_why_each_was_dropped(tmp_path):
    """(It blamed the length limit for pairs dropped as empty.)"""
    train = _write(tmp_path, "train", ["", "a b c d e f", " "], ["x", "y", "z"])
    valid = _write(tmp_path, "valid", ["a"], ["x"])
    with pytest.raises(NmtkitError) as e:
        preprocess(tmp_path / "c", "en", "de", train, valid, vocab=VocabSpec("word", 50), max_len=5)
    assert str(e.value) == (f"{tmp_path / 'train.en'}: no example left of 3 (dropped 1 longer than 5 tokens, 2 with "
                            "an empty stream)")


def test_existing_corpus_is_refused_without_overwrite(tmp_path):
    train, valid = _pairs(tmp_path)
    out = preprocess(tmp_path / "c", "en", "de", train, valid, vocab=VocabSpec("word", 50))
    with pytest.raises(NmtkitError, match="already holds a corpus folder; use --overwrite"):
        preprocess(out, "en", "de", train, valid, vocab=VocabSpec("word", 50))
    preprocess(out, "en", "de", train, valid, vocab=VocabSpec("word", 50), overwrite=True)


def test_failure_leaves_no_corpus_behind(tmp_path):
    train, valid = _pairs(tmp_path)
    (tmp_path / "valid.de").write_bytes(b"x\n\xc3\x28\n")
    with pytest.raises(NmtkitError, match=r"valid\.de:2: invalid UTF-8"):
        preprocess(tmp_path / "c", "en", "de", train, valid, vocab=VocabSpec("word", 50))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.de", "train.en", "valid.de", "valid.en"]


def test_missing_and_empty_files(tmp_path):
    train, valid = _pairs(tmp_path)
    with pytest.raises(NmtkitError, match=r"nope\.en: no such file"):
        preprocess(tmp_path / "c", "en", "de", tmp_path / "nope", valid)
    (tmp_path / "valid.en").write_text("")
    with pytest.raises(NmtkitError, match=r"valid\.en: file is empty"):
        preprocess(tmp_path / "c", "en", "de", train, valid)


def test_reused_vocabulary_files(tmp_path):
    train, valid = _pairs(tmp_path)
    first = preprocess(tmp_path / "c1", "en", "de", train, valid, vocab=VocabSpec("word", 50))
    spec = VocabSpec(src_file=first / "vocab.src.txt", tgt_file=first / "vocab.tgt.txt")
    second = preprocess(tmp_path / "c2", "en", "de", train, valid, vocab=spec)
    assert (second / "vocab.src.txt").read_text() == (first / "vocab.src.txt").read_text()


@pytest.mark.parametrize("kind", ["spm", "spm-bpe"])
def test_sentencepiece_vocabularies_are_joint_unless_told_otherwise(tmp_path, kind):
    train, valid = _pairs(tmp_path)
    out = preprocess(tmp_path / "c", "en", "de", train, valid, vocab=VocabSpec.parse(f"{kind}:20"))
    corpus = Corpus.open(out)
    assert corpus.vocabs["src"].kind == "spm" and len(corpus.vocabs["src"]) == len(corpus.tgt_vocab)
    assert (out / "vocab.src.model").read_bytes() == (out / "vocab.tgt.model").read_bytes()  # (one model, trained once)


def test_bad_vocab_spec():
    with pytest.raises(NmtkitError, match="--vocab"):
        VocabSpec.parse("bpe32000")


def test_several_source_streams(tmp_path):
    """APE-style corpus: PREFIX.src and PREFIX.mt as two input streams, PREFIX.pe the target."""
    for split, rows in (("train", [("a b", "x y", "x z"), ("c", "y", "y"), ("a", "", "z")]), ("valid", [("b", "x", "x")])):
        for k, ext in enumerate(("src", "mt", "pe")):
            (tmp_path / f"{split}.{ext}").write_text("".join(r[k] + "\n" for r in rows))
    out = preprocess(tmp_path / "c", ["src", "mt"], "pe", tmp_path / "train", tmp_path / "valid",
                     vocab=VocabSpec("word", 50))
    corpus = Corpus.open(out)
    assert list(corpus.meta.streams) == ["src", "mt", "tgt"] and list(corpus.meta.inputs) == ["src", "mt"]
    assert corpus.meta.streams["mt"].lang == "mt" and corpus.meta.streams["mt"].kind == "tokens"
    shard = Shard(corpus.shard_paths("train")[0])
    assert len(shard) == 2  # the example with an empty mt line is dropped
    assert corpus.vocabs["mt"].decode(shard.get("mt", 0).tolist()) == "x y"
    assert corpus.tgt_vocab.decode(shard.get("tgt", 0).tolist()) == "x z"
    assert corpus.vocabs["src"] is not corpus.vocabs["mt"]  # word vocabularies: one per stream
    named = preprocess(tmp_path / "n", ["src", "hyp=mt"], "pe", tmp_path / "train", tmp_path / "valid",
                       vocab=VocabSpec("word", 50, joint=True))
    joint = Corpus.open(named)
    assert list(joint.meta.inputs) == ["src", "hyp"] and joint.vocabs["src"].tokens == joint.vocabs["hyp"].tokens
    with pytest.raises(NmtkitError, match="--src 'tgt=mt'"):
        preprocess(tmp_path / "bad", ["src", "tgt=mt"], "pe", tmp_path / "train", tmp_path / "valid")
    (tmp_path / "valid.mt").write_text("x\ny\n")
    with pytest.raises(NmtkitError, match="valid.src has 1 lines but .*valid.mt has 2"):
        preprocess(tmp_path / "c2", ["src", "mt"], "pe", tmp_path / "train", tmp_path / "valid")


APE_ROWS = {  # (src, mt, pe)
    "train": [("a b", "x y", "x z"), ("c", "y w", "y"), ("a c", "w", "w x w"), ("b", "y x", "x y")],
    "valid": [("b", "x y", "y x"), ("c", "w", "")],
    "test": [("a", "x", "x x")],
}


def _ape_text(tmp_path, rows=APE_ROWS):
    for split, lines in rows.items():
        for k, ext in enumerate(("src", "mt", "pe")):
            (tmp_path / f"{split}.{ext}").write_text("".join(r[k] + "\n" for r in lines))
    return [tmp_path / split for split in rows]


def test_ape_edits_encode_the_target_as_operations(tmp_path):
    """--ape-edits mt: the shards' targets are the operations from mt to pe, one token each; the held-out
    references stay the post-edits; the manifest records the stream, and the corpus verifies."""
    splits = _ape_text(tmp_path)
    out = preprocess(tmp_path / "c", ["src", "mt"], "pe", *splits, vocab=VocabSpec("word", 50), ape_edits="mt")
    corpus = Corpus.open(out)
    assert corpus.manifest["options"]["ape_edits"] == "mt"
    tgt = corpus.tgt_vocab
    assert all(len(tgt.encode(op)) == 1 and tgt.encode(op) != [UNK] for op in (KEEP, DELETE))
    for split, rows in APE_ROWS.items():
        shard = Shard(corpus.shard_paths(split)[0])
        ops = [tgt.decode(shard.get("tgt", i).tolist()) for i in range(len(shard))]
        assert ops == [edit_operations(mt, pe) for _, mt, pe in rows]
        assert [apply_edits(mt, o) for (_, mt, _), o in zip(rows, ops)] == [pe for _, _, pe in rows]
        assert corpus.vocabs["mt"].decode(shard.get("mt", 0).tolist()) == rows[0][1]
    assert corpus.reference_path("valid").read_text() == "y x\n\n"
    assert (out / corpus.manifest["splits"]["valid"]["inputs"]["mt"]).read_text() == "x y\nw\n"
    assert verify_corpus(corpus).examples == {"train": 4, "valid": 2, "test": 1}
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [MARKER]  # the operation files are removed


def test_ape_edits_errors(tmp_path):
    splits = _ape_text(tmp_path)[:2]
    word = VocabSpec("word", 50)
    with pytest.raises(NmtkitError, match="--ape-edits 'pe': name the source stream") as e:
        preprocess(tmp_path / "c", ["src", "mt"], "pe", *splits, vocab=word, ape_edits="pe")
    assert e.value.exit_code == 2
    with pytest.raises(NmtkitError, match="--ape-edits 'src': .*beside at least one other source"):
        preprocess(tmp_path / "c", "src", "pe", *splits, vocab=word, ape_edits="src")
    with pytest.raises(NmtkitError, match="--ape-edits: .* use --vocab word:N") as e:
        preprocess(tmp_path / "c", ["src", "mt"], "pe", *splits, vocab=VocabSpec("spm", 50), ape_edits="mt")
    assert e.value.exit_code == 2
    (tmp_path / "train.pe").write_text(f"x z\ny {KEEP}\nw\nx\n")
    with pytest.raises(NmtkitError, match=r"train\.pe:2: the post-edit word '<keep>'"):
        preprocess(tmp_path / "c", ["src", "mt"], "pe", *splits, vocab=word, ape_edits="mt")
    assert not (tmp_path / "c").exists()


def test_the_options_and_the_longest_sentences_are_those_of_the_corpus(tmp_path):
    train = _write(tmp_path, "train", ["a b", "c", "a b c d e f g h i"], ["x", "y z", "x"])  # (the longest last)
    valid = _write(tmp_path, "valid", ["a"], ["x"])
    out = preprocess(tmp_path / "c", "en", "de", train, valid, vocab=VocabSpec("word", 50), max_len=30, shard_size=2)
    corpus = Corpus.open(out)
    assert corpus.manifest["options"]["max_len"] == 30 and corpus.manifest["options"]["shard_size"] == 2
    assert corpus.longest("train") == {"src": 9, "tgt": 2} and len(corpus.shard_paths("train")) == 2


def test_a_format_1_corpus_is_read(tmp_path):
    train, valid = _pairs(tmp_path)
    out = preprocess(tmp_path / "c", "en", "de", train, valid, vocab=VocabSpec("word", 50))
    manifest = json.loads((out / "manifest.json").read_text())
    streams = manifest.pop("streams")
    del manifest["files"]  # 0.1.0 recorded no checksums
    manifest.update(format=1, src_lang="en", tgt_lang="de",
                    vocab={"src": streams["src"]["vocab"], "tgt": streams["tgt"]["vocab"],
                           "src_size": streams["src"]["size"], "tgt_size": streams["tgt"]["size"], "kind": "word"})
    (out / "manifest.json").write_text(json.dumps(manifest))
    for shard in out.glob("*.h5"):  # 0.1.0's shards had no kind attribute
        with h5py.File(shard, "a") as f:
            for stream in f.values():
                del stream.attrs["kind"]
    corpus = Corpus.open(out)
    assert corpus.meta.streams["src"].size == streams["src"]["size"] and corpus.meta.target.lang == "de"
    assert corpus.meta.target.size == streams["tgt"]["size"] != streams["src"]["size"]
    batches = list(TrainingBatches(corpus.shard_paths("train"), 2).epoch(1))
    assert sum(b.size for b in batches) == corpus.sentences("train") and batches[0]["src"].data.dtype == torch.int64
