"""``preprocess --max-len N`` keeps a training pair of exactly N tokens on a side and drops one of N + 1, counting the
tokens as the model reads them (the vocabulary's words or pieces; neither <s> nor </s>), as ``train --max-len``
counts them."""
import json
import random

from nmtkit.data.batching import TrainingBatches
from nmtkit.data.preprocess import VocabSpec, preprocess
from nmtkit.data.shards import Corpus, Shard
from tests.conftest import run


def write(folder, name, pairs):
    (folder / f"{name}.en").write_text("".join(s + "\n" for s, _ in pairs))
    (folder / f"{name}.de").write_text("".join(t + "\n" for _, t in pairs))
    return folder / name


def kept(corpus):
    """The training pairs of a corpus, as token id tuples."""
    shard = Shard(corpus.shard_paths("train")[0])
    return [(tuple(shard.get("src", i).tolist()), tuple(shard.get("tgt", i).tolist())) for i in range(len(shard))]


def test_a_pair_of_exactly_max_len_words_is_kept_and_one_more_is_dropped(tmp_path):
    pairs = [("a b c", "x y z"), ("a b c d", "x"), ("a", "w x y z"), ("a b", "x y"), ("b c d", "z")]
    train, valid = write(tmp_path, "train", pairs), write(tmp_path, "valid", [("a", "x")])
    run(["preprocess", "--train", train, "--valid", valid, "--src", "en", "--tgt", "de", "--vocab", "word:20",
         "--max-len", 3, "-o", tmp_path / "c"])
    corpus = Corpus.open(tmp_path / "c")
    src, tgt = corpus.vocabs["src"], corpus.vocabs["tgt"]
    assert [(src.decode(s), tgt.decode(t)) for s, t in kept(corpus)] == [pairs[0], pairs[3], pairs[4]]
    assert json.loads((tmp_path / "c" / "manifest.json").read_text())["splits"]["train"]["dropped"]["too_long"] == 2


def test_pieces_count_and_train_filters_the_same_pairs(tmp_path):
    """With SentencePiece a side's length is its pieces, not its words; train's --max-len over an unfiltered corpus
    keeps exactly the pairs that preprocess's keeps."""
    g = random.Random(0)
    line = lambda: " ".join("".join(g.choice("abcdef") for _ in range(g.randrange(2, 7)))
                            for _ in range(g.randrange(1, 5)))
    pairs = [(line(), line()) for _ in range(80)]
    train, valid = write(tmp_path, "train", pairs), write(tmp_path, "valid", pairs[:3])
    vocab = VocabSpec("spm", 30)
    everything = Corpus.open(preprocess(tmp_path / "all", "en", "de", train, valid, vocab=vocab, max_len=None))
    src, tgt = everything.vocabs["src"], everything.vocabs["tgt"]
    pieces = [max(len(src.encode(s)), len(tgt.encode(t))) for s, t in pairs]
    words = [max(len(s.split()), len(t.split())) for s, t in pairs]
    max_len = sorted(pieces)[len(pieces) // 2]
    assert max_len in pieces and max_len + 1 in pieces  # pairs right at the limit and one past it
    assert any(w <= max_len < p for w, p in zip(words, pieces))  # words would keep what pieces drop

    filtered = Corpus.open(preprocess(tmp_path / "some", "en", "de", train, valid, vocab=vocab, max_len=max_len))
    src, tgt = filtered.vocabs["src"], filtered.vocabs["tgt"]
    want = [(tuple(src.encode(s)), tuple(tgt.encode(t))) for s, t in pairs]
    assert kept(filtered) == [x for x in want if max(map(len, x)) <= max_len]

    batches = TrainingBatches(everything.shard_paths("train"), 8, max_len=max_len)
    by_train = sorted((tuple(b["src"].data[i, :n - 1].tolist()), tuple(b.tgt_out[i, :m - 1].tolist()))
                      for b in batches.epoch(1)
                      for i, (n, m) in enumerate(zip(b["src"].lengths.tolist(), (b.tgt_out != 0).sum(1).tolist())))
    assert by_train == sorted(x for x in kept(everything) if max(map(len, x)) <= max_len)
    assert batches.skipped == sum(p > max_len for p in pieces) > 0

