"""The share of padding in an epoch's training batches of corpus folders (issue 33: bucketing across shards).

    python bench/padding.py CORPUS ...

For each corpus: the padded and the real tokens of every batch of epoch 1 (`TrainingBatches`, seed 1, --max-len 80),
every text input and the target, with batches of 64 sentences and of 2,048 tokens.
"""
import sys

from nmtkit.data.batching import TrainingBatches
from nmtkit.data.shards import Corpus


def main() -> None:
    for folder in sys.argv[1:]:
        corpus = Corpus.open(folder)
        shards = corpus.shard_paths("train")
        for by_tokens, size in ((False, 64), (True, 2048)):
            real = padded = 0
            for batch in TrainingBatches(shards, size, by_tokens=by_tokens, seed=1, max_len=80).epoch(1):
                for stream in batch.inputs.values():
                    if stream.is_tokens:
                        real, padded = real + int(stream.lengths.sum()), padded + stream.data.numel()
                real, padded = real + batch.tgt_tokens, padded + batch.tgt_out.numel()
            unit = "tokens" if by_tokens else "sentences"
            print(f"{folder}: {len(shards)} shards, batches of {size} {unit}: padding "
                  f"{100 * (padded - real) / padded:.2f}% of the tokens")


if __name__ == "__main__":
    main()
