"""Why ``nmtkit serve`` decodes on the main thread: the time of small PyTorch CPU operations (the size of one
decoding step's, a beam of 5 over 32 sentences: [160, 512]) called from the main thread and from a thread started
later, at ``--threads`` intra-op threads.

    python bench/thread_dispatch.py [--threads 2]
"""
from __future__ import annotations

import argparse
import threading
import time

import torch


def timings(tag: str, repeats: int = 2000) -> None:
    """Print the mean time of each operation, called ``repeats`` times from the current thread."""
    h, index = torch.randn(160, 512), torch.randint(0, 160, (160,))
    operations = {"sigmoid": lambda: torch.sigmoid(h), "cat": lambda: torch.cat([h, h], 1),
                  "index_select": lambda: h.index_select(0, index), "add": lambda: h + h}
    for name, operation in operations.items():
        for _ in range(50):
            operation()
        start = time.perf_counter()
        for _ in range(repeats):
            operation()
        print(f"{tag:>13} {name:>12}: {(time.perf_counter() - start) / repeats * 1e6:7.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="PyTorch's intra-op threads [default: 2]")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    timings("main thread")
    worker = threading.Thread(target=timings, args=("other thread",))
    worker.start()
    worker.join()
    timings("main thread")


if __name__ == "__main__":
    main()
