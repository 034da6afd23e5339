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
