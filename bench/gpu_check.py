"""The Python side of bench/gpu_check.sh (issue 33): its data, each architecture's options and decoding command, the
Transformer's arithmetic against the GPU's matrix rate, and the one summary file.

    python bench/gpu_check.py multimodal NUMBERS OUT        numbers corpus -> OUT/{train,valid,test}.{en,mt,de,img}
                                                            and OUT/{train,valid,test}.npy (random 7x7 grids)
    python bench/gpu_check.py options ARCH tiny|default      the size options of ARCH, one per line
    python bench/gpu_check.py decode CHECKPOINT DIR         the decoding command of a model of DIR's corpus
    python bench/gpu_check.py rate CHECKPOINT CORPUS BATCH DEVICE
                                                            FLOP per target token of one training batch, and the
                                                            device's matrix rate in its mixed precision
    python bench/gpu_check.py summary OUT                   OUT/summary.txt from the logs under OUT
"""
from __future__ import annotations

import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Optional

GRID, DIM = 49, 64  #: the multimodal corpus' image: a 7 x 7 grid of 64 random features
#: the models of the every-architecture check: small (``tiny``, for the CPU smoke test) or the architectures'
#: own defaults; only the options an architecture has are given it
TINY = {"emb_size": 32, "enc_size": 32, "dec_size": 48, "d_model": 32, "ffn_size": 64, "heads": 2, "enc_layers": 1,
        "dec_layers": 1, "layers": 1}


def multimodal(numbers: str, out: str) -> None:
    """English, a damaged German (every third word dropped: the ``mt`` input), German, and an image of random
    features per line, from the numbers corpus of ``nmtkit demo-corpus``."""
    import numpy as np

    source, target = Path(numbers), Path(out)
    target.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    for split in ("train", "valid", "test"):
        en = (source / f"{split}.en").read_text(encoding="utf-8").splitlines()
        de = (source / f"{split}.de").read_text(encoding="utf-8").splitlines()
        mt = [" ".join(w for k, w in enumerate(line.split()) if k % 3 != 2) or line for line in de]
        for suffix, lines in (("en", en), ("de", de), ("mt", mt), ("img", [f"{split}{i}" for i in range(len(en))])):
            (target / f"{split}.{suffix}").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        np.save(target / f"{split}.npy", rng.standard_normal((len(en), GRID, DIM)).astype(np.float16))


def options(arch: str, size: str) -> None:
    from nmtkit.models.registry import get_spec, load_plugins, model_names

    load_plugins()
    if arch not in model_names():
        return  # train names the unknown architecture itself
    names = {o.name for o in get_spec(arch).options}
    if size == "tiny":
        for name, value in TINY.items():
            if name in names:
                print(f"--{name.replace('_', '-')}", value, sep="\n")


def decode(checkpoint: str, folder: str) -> None:
    """``translate`` (or ``caption``, for a model of images alone) with the inputs the model reads, from the test
    files of the multimodal corpus in ``folder``."""
    from nmtkit.inference import load_model

    model = load_model(checkpoint).model
    texts = [name for name in model.inputs if name != "image"]
    files = {"src": "en", "mt": "mt"}
    words = ["caption" if not texts else "translate", "-m", checkpoint]
    for name in texts:
        words += ["-i", f"{folder}/test.{files[name]}"]
    if "image" in model.inputs:
        words += ["--features", f"{folder}/test.npy"]
    print("\n".join(words))


def rate(checkpoint: str, corpus: str, batch_tokens: str, device_name: str) -> None:
    """FLOP of one training step (forward and backward, every matrix product: ``torch.utils.flop_counter``) per
    target token of a batch of the corpus, and the device's matrix-multiply rate in its mixed precision (float32 on
    a CPU), at its peak (8192 cubed on a GPU) and at d_model x 4 d_model, as JSON."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from nmtkit.data.batching import TrainingBatches
    from nmtkit.data.shards import Corpus
    from nmtkit.device import autocast_dtype, pick_device
    from nmtkit.inference import load_model
    from nmtkit.models.loss import cross_entropy

    device = pick_device(device_name)
    loaded = load_model(checkpoint, device)
    model = loaded.model.train()
    shards = Corpus.open(corpus).shard_paths("train")
    batch = next(iter(TrainingBatches(shards, int(batch_tokens), by_tokens=True).epoch(1))).to(device)
    dtype = autocast_dtype(device) or torch.float32
    counter = FlopCounterMode(display=False)
    with counter, torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
        (cross_entropy(model(batch).logits.float(), batch.tgt_out) / batch.tgt_tokens).backward()
    d = int(loaded.config.get("d_model", 512))
    big = 8192 if device.type == "cuda" else 512  # the peak: a large square product (the vendor's figure's kind)
    print(json.dumps({"flop_per_token": counter.get_total_flops() / batch.tgt_tokens,
                      "matmul_flops": _matmul_rate(16384, d, 4 * d, device, dtype),
                      "peak_flops": _matmul_rate(big, big, big, device, dtype), "dtype": str(dtype).replace("torch.", "")}))


def _matmul_rate(rows: int, inner: int, cols: int, device, dtype) -> float:
    """FLOP/s of a ``rows x inner`` by ``inner x cols`` matrix product on ``device``: the best of 5 runs of 20
    products back to back (launches and synchronisation do not count)."""
    import torch

    a = torch.randn(rows, inner, device=device, dtype=dtype)
    b = torch.randn(inner, cols, device=device, dtype=dtype)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda *_: None)
    a @ b  # (the first product chooses its kernel)
    best, repeats = float("inf"), 20
    for _ in range(5):
        sync(device)
        start = time.perf_counter()
        for _ in range(repeats):
            a @ b
        sync(device)
        best = min(best, (time.perf_counter() - start) / repeats)
    return 2 * rows * inner * cols / best


def _records(path: Path, kind: str) -> list[dict]:
    if not path.exists():
        return []
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("type") == kind]


def _failed(log: Path) -> str:
    """``FAILED:`` and the last line of a failed command's ``log``."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return "FAILED: " + (text.strip().splitlines() or ["no log"])[-1][:100]


def _decoding(log: Path, output: Optional[Path] = None) -> str:
    """``N lines, X lines/s`` from a decoding command's log, and the words per line of its ``output`` where given
    (an undertrained model's outputs run long, and take longer: speeds compare at equal lengths); or what went
    wrong."""
    text = log.read_text(errors="replace") if log.exists() else ""
    found = re.search(r"(?:translated|captioned) (\d+) lines in ([\d.]+) s \(([\d.]+) lines/s", text)
    if found:
        words = ""
        if output is not None and output.exists():
            outputs = output.read_text(encoding="utf-8").splitlines()
            words = f", {sum(len(line.split()) for line in outputs) / max(len(outputs), 1):.1f} words a line"
        return f"{found[1]} lines, {float(found[3]):,.1f} lines/s{words}"
    return _failed(log)


def _serving(root: Path) -> list[str]:
    """Step 3's lines of the summary (none if it did not run): each way of batching's phases under load, and what
    it decoded; FAILED where it did not run through or lost or mixed up an answer."""
    modes = [mode for mode in ("batches", "continuous") if (root / "logs" / f"serve.{mode}.log").exists()]
    if not modes:
        return []
    table = ["| batching | clients | sent/s | vs translate (batch 32) | p50 ms | p99 ms | answered | mixed up | differs "
             "| errors | unsent | lines a batch |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    notes = []
    for mode in modes:
        figures = root / f"serve.{mode}.json"
        if not figures.exists():
            notes.append(f"{mode}: {_failed(root / 'logs' / f'serve.{mode}.log')}")
            continue
        run = json.loads(figures.read_text())
        for p in run["phases"]:
            table.append(f"| {mode} | {p['clients']} | {p['sentences_per_s']:,.1f} | {p['vs_translate']:.2f} | "
                         f"{p['p50_ms']:,.1f} | {p['p99_ms']:,.1f} | {p['answered']} | {p['mixed_up']} | "
                         f"{p['differs']} | {p['errors']} | {p['unsent']} | {p['mean_batch']:.1f} |")
        lost = any(p["errors"] or p["mixed_up"] or p["unsent"] for p in run["phases"])
        notes.append(f"{mode}: {run['sentences']} lines, beam {run['beam']}, device {run['device']}; translate "
                     f"(batch 32) {run['translate_sentences_per_s']:,.1f} sentences/s"
                     + ("; FAILED: answers lost, unsent or mixed up" if lost else ""))
    return ["", "## serving under load (bench/serve_load.py): one sentence a request", "", *table, "", *notes]


def _step_row(line: str) -> str:
    """A line of logs/steps.tsv (log, seconds, exit status or ``not run``) as a row of the summary's table: FAILED
    where the command failed, was stopped at TIME_LIMIT or was not run."""
    log, seconds, status = line.split("\t")
    if status == "not run":
        status = "FAILED: not run (TIME_LIMIT reached)"
    elif status in ("124", "137"):
        status = f"FAILED: stopped at TIME_LIMIT (exit {status})"
    elif status != "0":
        status = f"FAILED: exit {status}"
    return f"| {log} | {seconds} | {status} |"


def summary(out: str) -> None:
    """The one summary file: the machine; every architecture's check; the Transformers' speed by window (epoch 1
    apart), peak GPU memory, share of the matrix rate, and decoding speed; the seconds of each command."""
    import torch

    root = Path(out)
    lines = [f"# bench/gpu_check.sh, {time.strftime('%Y-%m-%d %H:%M')}",
             f"torch {torch.__version__}, CUDA {torch.version.cuda}, python {platform.python_version()}",
             "device: " + (torch.cuda.get_device_name(0) if torch.cuda.is_available()
                           else f"CPU, {os.cpu_count()} cores"),
             "", "## every architecture: trained, then decoded", "",
             "| architecture | updates | last loss | tok/s (last window) | peak GPU GB | decoding |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    failed = 0
    tried = sorted(log.name[:-len(".train.log")] for log in (root / "logs").glob("*.train.log")
                   if not log.name.endswith(".base.train.log"))
    for arch in tried:
        train = _records(root / "arch" / arch / "train.jsonl", "train")
        decoded = _decoding(root / "logs" / f"{arch}.decode.log")
        failed += not train or decoded.startswith("FAILED")
        last = train[-1] if train else {}
        lines.append(f"| {arch} | {last.get('step', 'FAILED')} | {last.get('loss', '')} | "
                     f"{last.get('tok_per_s', 0):,.0f} | {last.get('peak_gpu_gb', '-')} | {decoded} |")
    lines += ["", f"{failed} architecture(s) failed" if failed else "every architecture trained and decoded" if tried
              else "none asked for (ARCHS blank)" if not os.environ.get("ARCHS", "every").strip()
              else "FAILED: no architecture ran (see logs)"]
    for log in sorted((root / "logs").glob("*.base.train.log")):
        base = root / "base" / log.name[:-len(".base.train.log")]
        train = _records(base / "train.jsonl", "train")
        if not train:
            lines += ["", f"## {base.name}: {_failed(log)}"]
            continue
        rate_file = base.parent / f"{base.name}.rate.json"
        rates = json.loads(rate_file.read_text()) if rate_file.exists() else None
        lines += ["", f"## {base.name}: tok/s per window of {train[0]['step']} updates", "",
                  "| updates to | epoch | tok/s | peak GPU GB | share of the matrix rate |",
                  "| ---: | ---: | ---: | ---: | ---: |"]
        for r in train:
            share = f"{100 * r['tok_per_s'] * rates['flop_per_token'] / rates['peak_flops']:.1f}%" if rates else "-"
            peak = r.get("peak_gpu_gb", "-")
            lines.append(f"| {r['step']} | {r['epoch']} | {r['tok_per_s']:,.0f} | {peak} | {share} |")
        first = [r["tok_per_s"] for r in train if r["epoch"] == 1]
        later = [r["tok_per_s"] for r in train if r["epoch"] > 1]
        lines.append("")
        lines.append(f"median tok/s, epoch 1: {statistics.median(first):,.0f}" if first else "no window in epoch 1")
        lines.append(f"median tok/s, later epochs: {statistics.median(later):,.0f}" if later else "no later epoch")
        if not rates:
            lines.append(f"share of the matrix rate: {_failed(root / 'logs' / f'{base.name}.rate.log')}")
        else:
            lines.append(f"{rates['flop_per_token'] / 1e6:,.1f} MFLOP per target token (forward and backward); matrix "
                         f"rate in {rates['dtype']}: {rates['peak_flops'] / 1e12:.1f} TFLOP/s (the share's base: a "
                         f"square product), {rates['matmul_flops'] / 1e12:.1f} at the model's d x 4d")
        profile = root / "logs" / f"{base.name}.profile.txt"
        if profile.exists():  # (train --profile of updates PROFILE: their window runs slower)
            lines.append("train --profile (its window runs slower): " + profile.read_text().splitlines()[0])
        for mode in ("greedy", "beam5"):  # (decoded: the plain runs at BASE_BATCH, not +compile or @TOKENS)
            for where, log, output in (
                    ("", f"{base.name}.{mode}.log", f"{base.name}.test.{mode}.de"),
                    (f" on the CPU ({os.cpu_count()} cores), a sample", f"{base.name}.cpu.{mode}.log",
                     f"{base.name}.sample.{mode}.de")):
                if (root / "logs" / log).exists():
                    lines.append(f"test decoding{where}, {mode}: "
                                 f"{_decoding(root / 'logs' / log, root / 'base' / output)}")
    lines += _serving(root)
    steps = root / "logs" / "steps.tsv"
    if steps.exists():  # what each command took (a GPU process's start-up weighs on the small steps)
        lines += ["", "## seconds per command (TIME_LIMIT stops the check)", "", "| command's log | seconds | exit status |",
                  "| --- | ---: | ---: |"]
        lines += [_step_row(line) for line in steps.read_text().splitlines()]
    (root / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    if failed or any("FAILED" in line for line in lines):
        sys.exit(1)


if __name__ == "__main__":
    {"multimodal": multimodal, "options": options, "decode": decode, "rate": rate,
     "summary": summary}[sys.argv[1]](*sys.argv[2:])
