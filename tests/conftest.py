"""Shared fixtures: a tiny corpus, a tiny model configuration and a briefly trained checkpoint."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from nmtkit.cli import main
from nmtkit.data.numbers import write_demo_corpus
from nmtkit.data.preprocess import VocabSpec, preprocess

TINY_MODEL = ["--emb-size", "32", "--enc-size", "32", "--dec-size", "48", "--dropout", "0.0"]
TINY_CONFIG = dict(arch="rnnsearch", emb_size=16, enc_size=16, dec_size=24, att_size=0, readout_size=0,
                   dropout=0.0, tie_embeddings=False, param_init=0.1)

torch.set_num_threads(2)


def run(args, input=None, ok=True):
    """Run the nmtkit CLI in-process; assert success (or failure with ``ok=False``)."""
    result = CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=False, prog_name="nmtkit")
    if ok:
        assert result.exit_code == 0, f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    else:
        assert result.exit_code != 0, result.stdout
    return result


def pipe(path, text: str) -> str:
    """A named pipe at ``path`` that a thread fills with ``text`` once it is opened, as ``<(command)`` would."""
    os.mkfifo(path)

    def fill():
        with open(path, "w") as f:
            f.write(text)
    threading.Thread(target=fill, daemon=True).start()
    return str(path)


@pytest.fixture(scope="session")
def text_dir(tmp_path_factory) -> Path:
    """train/valid/test.{en,de}: 2000/40/30 number pairs."""
    return write_demo_corpus(tmp_path_factory.mktemp("text"), train=2000, valid=40, test=30)


@pytest.fixture(scope="session")
def corpus_dir(text_dir, tmp_path_factory) -> Path:
    """The tiny corpus preprocessed with word vocabularies."""
    out = tmp_path_factory.mktemp("corpus") / "data"
    return preprocess(out, "en", "de", text_dir / "train", text_dir / "valid", text_dir / "test",
                      VocabSpec("word", 200))


@pytest.fixture(scope="session")
def trained_ckpt(corpus_dir, tmp_path_factory) -> Path:
    """A tiny rnnsearch trained for 120 updates on the number corpus."""
    save = tmp_path_factory.mktemp("ckpt")
    run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--max-steps", 120, "--valid-every", 60,
         "--lr", 0.005, "--batch-size", 32, "--log-every", 20])
    return save / "best.pt"


def forward(model, batch):
    """A model's teacher-forced logits and attention."""
    out = model(batch)
    return out.logits, out.attention


def unpack(loaded):
    """Model, source vocabulary and target vocabulary of a loaded checkpoint."""
    return loaded.model, loaded.vocabs["src"], loaded.tgt_vocab


@pytest.fixture
def graphs():
    """The graphs torch.compile makes, counted by an eager backend, for a fresh compiler: (the graphs, the
    backend to give torch.compile)."""
    torch._dynamo.reset()
    made = []

    def backend(graph, example_inputs):
        made.append(graph)
        return graph.forward
    yield made, backend
    torch._dynamo.reset()
