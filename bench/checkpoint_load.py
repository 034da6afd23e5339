"""What checking a checkpoint's CRC-32s costs when it is loaded: ``load_checkpoint`` (the archive's checksums read
in a thread while ``torch.load`` reads the tensors), the two one after the other (as before 2026-11-29), and
``torch.load`` alone, taking turns, on a checkpoint of ``--mb`` megabytes written to a temporary folder (``--dir``;
by default the system's). The file is read from the page cache after the first round
(it was just written): the figures are the cost in memory bandwidth and CPU, not a disk's.

    python bench/checkpoint_load.py --mb 1024 --rounds 3
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from nmtkit.checkpoint import check_crc, load_checkpoint, save_checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=1024, help="the checkpoint's size in megabytes (float32 weights)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to write it (default: the system's temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "big.pt"
        values = args.mb * 2**20 // 4
        layers = {f"layer{k}.weight": torch.randn(values // 64) for k in range(64)}  # (64 tensors, as a model's)
        start = time.perf_counter()
        save_checkpoint(path, {"model": layers, "config": {"arch": "transformer"}})
        print(f"wrote {path.stat().st_size / 2**20:,.0f} MB in {time.perf_counter() - start:.2f} s")
        def torch_load() -> None:
            torch.load(path, map_location="cpu", weights_only=True)

        def one_after_the_other() -> None:
            check_crc(path)
            torch_load()

        timings: dict[str, list[float]] = {"load_checkpoint": [], "crc, then torch.load": [], "torch.load": [],
                                           "crc": []}
        for _ in range(args.rounds):
            for name, run in (("load_checkpoint", lambda: load_checkpoint(path)),
                              ("crc, then torch.load", one_after_the_other), ("torch.load", torch_load),
                              ("crc", lambda: check_crc(path))):
                start = time.perf_counter()
                run()
                timings[name].append(time.perf_counter() - start)
        size = path.stat().st_size / 2**20
        for name, times in timings.items():
            print(f"{name:20} " + " ".join(f"{t:6.2f}" for t in times) + f" s   best {min(times):.2f} s "
                  f"({size / min(times):,.0f} MB/s)")
        for name in ("load_checkpoint", "crc, then torch.load"):
            ratios = [a / b for a, b in zip(timings[name], timings["torch.load"])]
            print(f"{name} / torch.load, each round: " + " ".join(f"{r:.2f}" for r in ratios))


if __name__ == "__main__":
    main()
