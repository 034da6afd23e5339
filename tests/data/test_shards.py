import numpy as np

from nmtkit.data.shards import Shard, ShardWriter


def test_shards_round_trip_across_several_files(tmp_path):
    rng = np.random.default_rng(0)
    data = [(rng.integers(4, 100, rng.integers(0, 9)).tolist(), rng.integers(4, 100, rng.integers(1, 9)).tolist())
            for _ in range(23)]
    w = ShardWriter(tmp_path, "train", ["src", "tgt"], shard_size=10)
    for s, t in data:
        w.add(src=s, tgt=t)
    shards = w.close()
    assert [s["sentences"] for s in shards] == [10, 10, 3]
    back = []
    for info in shards:
        shard = Shard(tmp_path / info["file"])
        assert len(shard) == info["sentences"]
        assert shard.lengths("src").tolist() == [len(shard.get("src", i)) for i in range(len(shard))]
        back += [(shard.get("src", i).tolist(), shard.get("tgt", i).tolist()) for i in range(len(shard))]
    assert back == data


def test_feature_streams_round_trip_beside_token_streams(tmp_path):
    rng = np.random.default_rng(1)
    images = [rng.standard_normal((rng.integers(1, 5), 3)).astype(np.float16) for _ in range(7)]
    w = ShardWriter(tmp_path, "train", ["image", "tgt"], shard_size=4)
    for i, feats in enumerate(images):
        w.add(image=feats, tgt=[4 + i])
    back = []
    for info in w.close():
        shard = Shard(tmp_path / info["file"])
        assert shard.kind("image") == "features" and shard.kind("tgt") == "tokens"
        back += [shard.get("image", i) for i in range(len(shard))]
    assert all(a.dtype == np.float16 and np.array_equal(a, b) for a, b in zip(back, images))


def test_examples_that_share_an_item_store_it_once(tmp_path):
    rng = np.random.default_rng(2)
    images = [rng.standard_normal((3, 2)).astype(np.float16) for _ in range(4)]
    w = ShardWriter(tmp_path, "train", ["image", "tgt"], shard_size=5)
    examples = [(k, [4 + k, 5 + j]) for k in range(4) for j in range(k + 1)]  # image k has k + 1 captions
    for k, caption in examples:
        w.add(image=images[k], tgt=caption)  # the same array for every caption of an image
    infos = w.close()
    assert [i["sentences"] for i in infos] == [5, 5]
    assert infos[0]["rows"]["image"] == 3 * 3  # images 0, 1, 2 once each, not 5 times
    back = []
    for info in infos:
        shard = Shard(tmp_path / info["file"])
        assert shard.lengths("image").tolist() == [3] * len(shard)
        back += [(shard.get("image", i), shard.get("tgt", i).tolist()) for i in range(len(shard))]
    assert all(np.array_equal(a, images[k]) and t == caption for (a, t), (k, caption) in zip(back, examples))
