import os
import random
import re

import numpy as np
import pytest
import torch

from nmtkit.data.batching import TrainingBatches, bucket_batches, make_batch, padded_width
from nmtkit.data.shards import ShardWriter
from nmtkit.data.vocab import BOS, EOS, PAD
from nmtkit.errors import NmtkitError


def test_make_batch_pads_and_adds_markers():
    b = make_batch([[5, 6, 7], [8]], [[9], [10, 11]])
    assert b["src"].data.tolist() == [[5, 6, 7, EOS], [8, EOS, PAD, PAD]]
    assert b["src"].lengths.tolist() == [4, 2]
    assert b.tgt_in.tolist() == [[BOS, 9, PAD], [BOS, 10, 11]]
    assert b.tgt_out.tolist() == [[9, EOS, PAD], [10, 11, EOS]]
    assert b.tgt_tokens == 5


def test_widths_pad_up_to_a_multiple_within_a_cap():
    assert [padded_width(w, 8) for w in (1, 8, 9, 16, 17)] == [8, 8, 16, 16, 24]
    assert padded_width(9, 8, cap=12) == 12 and padded_width(13, 8, cap=12) == 13  # never below what is needed
    b = make_batch({"src": [[5, 6, 7], [8]], "mt": [[4] * 9]}, [[9], [10, 11]], multiple=8, caps={"mt": 12, "tgt": 6})
    assert b["src"].data.shape == (2, 8) and b["src"].data[0].tolist() == [5, 6, 7, EOS] + [PAD] * 4
    assert b["src"].lengths.tolist() == [4, 2] and b["mt"].data.shape == (1, 12)
    assert b.tgt_in.shape == b.tgt_out.shape == (2, 6) and b.tgt_tokens == 5
    assert b.tgt_out[1].tolist() == [10, 11, EOS, PAD, PAD, PAD]


@pytest.mark.parametrize("by_tokens,size", [(False, 8), (True, 60)])
def test_bucket_batches_cover_every_example_once(by_tokens, size):
    lengths = np.random.default_rng(1).integers(1, 30, 500)
    batches = bucket_batches(lengths, size, by_tokens, random.Random(3), pool_batches=10)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(500))
    for b in batches:
        if by_tokens:
            assert len(b) == 1 or len(b) * lengths[b].max() <= size
        else:
            assert len(b) <= size
    spread = np.mean([lengths[b].max() - lengths[b].min() for b in batches])
    assert spread < 5  # bucketing: similar lengths share a batch


def test_bucket_batches_reproducible_by_seed():
    lengths = np.arange(100) % 17
    a = bucket_batches(lengths, 8, False, random.Random(5))
    b = bucket_batches(lengths, 8, False, random.Random(5))
    c = bucket_batches(lengths, 8, False, random.Random(6))
    assert all((x == y).all() for x, y in zip(a, b))
    assert any(len(x) != len(y) or (x != y).any() for x, y in zip(a, c))


def _shard(tmp_path, n=50):
    w = ShardWriter(tmp_path, "train", ["src", "tgt"], shard_size=20)
    for i in range(n):
        w.add(src=[4 + i % 7] * (1 + i % 12), tgt=[5] * (1 + i % 9))
    return [tmp_path / s["file"] for s in w.close()]


def test_ranks_get_disjoint_equal_shares(tmp_path):
    shards = _shard(tmp_path)
    seen = []
    counts = []
    for rank in range(2):
        tb = TrainingBatches(shards, 4, seed=2, rank=rank, world_size=2)
        batches = list(tb.epoch(1))
        counts.append(len(batches))
        seen.append({tuple(t for t in r if t != PAD) for b in batches for r in b["src"].data.tolist()})
    assert counts[0] == counts[1] and seen[0].isdisjoint(seen[1])  # (each example's source is its own)
    single = list(TrainingBatches(shards, 4, seed=2).epoch(1))
    assert sum(counts) <= len(single)
    assert seen[0] | seen[1] <= {tuple(t for t in r if t != PAD) for b in single for r in b["src"].data.tolist()}


def test_batches_come_in_random_order_and_shards_in_another_each_epoch(tmp_path):
    """Sorted by length within a pool, the batches are shuffled after; and the shards (each 2 pools of batches of
    one: bucketed alone) are read in a new order each epoch, here told apart by their source token."""
    lengths = np.random.default_rng(1).integers(1, 30, 500)
    maxima = [int(lengths[b].max()) for b in bucket_batches(lengths, 8, False, random.Random(3), pool_batches=100)]
    assert maxima != sorted(maxima) and maxima != sorted(maxima, reverse=True)
    paths = []
    for k in range(4):
        (tmp_path / f"s{k}").mkdir()
        w = ShardWriter(tmp_path / f"s{k}", "train", ["src", "tgt"], shard_size=200)
        for i in range(200):
            w.add(src=[4 + k] * (1 + i % 5), tgt=[5])
        paths += [tmp_path / f"s{k}" / s["file"] for s in w.close()]
    tb = TrainingBatches(paths, 1, seed=2)
    firsts = {int(next(iter(tb.epoch(epoch)))["src"].data[0, 0]) for epoch in range(1, 7)}
    assert len(firsts) > 1


def test_epoch_order_changes_with_epoch_and_skip_resumes(tmp_path):
    shards = _shard(tmp_path)
    tb = TrainingBatches(shards, 4, seed=2)
    e1 = [b["src"].data.tolist() for b in tb.epoch(1)]
    e2 = [b["src"].data.tolist() for b in tb.epoch(2)]
    assert e1 != e2
    assert [b["src"].data.tolist() for b in tb.epoch(1, skip=5)] == e1[5:]


def test_overlong_pairs_are_skipped_and_counted(tmp_path):
    shards = _shard(tmp_path)
    tb = TrainingBatches(shards, 4, seed=2, max_len=5)
    batches = list(tb.epoch(1))
    assert all(b["src"].data.size(1) <= 6 and b.tgt_in.size(1) <= 6 for b in batches)
    kept = sum(b.size for b in batches)
    assert tb.skipped == 50 - kept and tb.skipped > 0


def test_a_batch_holds_named_token_and_feature_streams():
    feats = [np.ones((3, 2), np.float32), np.full((1, 2), 2, np.float32)]
    b = make_batch({"src": [[5, 6], [7]], "image": feats}, [[9], [10, 11]])
    assert b["src"].is_tokens and not b["image"].is_tokens and b.size == 2
    assert b["image"].data.shape == (2, 3, 2) and b["image"].lengths.tolist() == [3, 1]
    assert b["image"].mask.tolist() == [[True, True, True], [True, False, False]]
    assert (b["image"].data[1, 1:] == 0).all() and b["src"].lengths.tolist() == [3, 2]
    moved = b.to(torch.device("cpu"))
    assert set(moved.inputs) == {"src", "image"} and torch.equal(moved.tgt_out, b.tgt_out)
    assert b.shape_text() == "2 sentences, src 3 / image 3 / tgt 3 positions"


def test_training_batches_pad_their_widths(tmp_path):
    shards = _shard(tmp_path)
    plain = list(TrainingBatches(shards, 4, seed=2).epoch(1))
    padded = list(TrainingBatches(shards, 4, seed=2, pad_multiple=8, caps={"tgt": 7}).epoch(1))
    assert len(plain) == len(padded)
    for a, b in zip(plain, padded):  # the same examples, wider: a multiple of 8, the target within its cap
        width = a["src"].data.size(1)
        assert b["src"].data.size(1) == -(-width // 8) * 8 and torch.equal(b["src"].data[:, :width], a["src"].data)
        assert b.tgt_out.size(1) == max(a.tgt_out.size(1), 7) and b.tgt_tokens == a.tgt_tokens


def test_small_shards_are_bucketed_together(tmp_path):
    """Shards holding fewer than two pools of examples are bucketed with the next ones: a batch's sentences are of
    one length, as in one large shard (bucketed shard by shard, batches of 20-example shards spread over 3-4 lengths);
    every example still comes once an epoch."""
    shards = _shard(tmp_path, n=480)  # 24 shards of 20
    tb = TrainingBatches(shards, 4, seed=3)
    batches = list(tb.epoch(1))
    keys = [torch.maximum(b["src"].lengths, (b.tgt_out != PAD).sum(1)) for b in batches]  # what bucketing sorts by
    spreads = [int(k.max() - k.min()) for k in keys]
    assert max(spreads) <= 1, spreads
    seen = sorted(tuple(r[:int(n)]) for b in batches for r, n in zip(b["src"].data.tolist(), b["src"].lengths))
    assert len(seen) == 480 and [list(tb.epoch(1))[k]["src"].data.tolist() for k in (0, 7)] == \
        [batches[k]["src"].data.tolist() for k in (0, 7)]  # reproducible


def _shards_of(tmp_path, lengths, shard_size=20):
    """Shards of one example per length in ``lengths`` (source and target of that many tokens)."""
    w = ShardWriter(tmp_path, "train", ["src", "tgt"], shard_size=shard_size)
    for n in lengths:
        w.add(src=[4] * n, tgt=[5] * n)
    return [tmp_path / s["file"] for s in w.close()]


def test_a_shard_the_length_filter_empties_is_passed_over(tmp_path):
    """A shard whose every example is too long gives no batch, and a window of shards beginning with it is bucketed
    all the same (by tokens, the pool's size comes from the mean length of what is kept: of nothing, here)."""
    shards = _shards_of(tmp_path, [30] * 20 + [3, 4, 5, 6] * 10)  # the first shard all too long
    for by_tokens, size in ((True, 60), (False, 4)):
        tb = TrainingBatches(shards, size, by_tokens=by_tokens, seed=5, max_len=10)
        for epoch in range(1, 7):  # (the empty shard comes first in epochs 1, 3 and 6 of seed 5)
            assert sum(b.size for b in tb.epoch(epoch)) == 40 and tb.skipped == 20


def test_an_epoch_without_a_batch_is_an_error_not_an_endless_run(tmp_path):
    shards = _shards_of(tmp_path, [30] * 25 + [12] * 5)
    with pytest.raises(NmtkitError, match="--max-len 10: every one of the corpus's 30 training examples is longer"):
        list(TrainingBatches(shards, 4, seed=1, max_len=10).epoch(1))
    with pytest.raises(NmtkitError, match="fewer batches than the 16 processes"):
        list(TrainingBatches(shards, 4, seed=1, world_size=16).epoch(1))


def test_a_shard_written_again_under_a_run_is_refused_not_mixed_in(tmp_path):
    """(`preprocess --overwrite` into the corpus a run trains on.) A shard gone gets Shard's own error."""
    shards = _shard(tmp_path / "a")
    tb = TrainingBatches(shards, 4, seed=2)
    assert list(tb.epoch(1))
    again = _shard(tmp_path / "b", n=60)
    os.replace(again[0], shards[0])  # (another file under the same name)
    with pytest.raises(NmtkitError, match=f"^{re.escape(str(shards[0]))}: changed since training began"):
        list(tb.epoch(2))
    shards[0].unlink()
    with pytest.raises(NmtkitError, match="train.000.h5"):
        list(tb.epoch(3))
