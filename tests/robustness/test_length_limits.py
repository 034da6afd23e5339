"""A model with a length limit (a table of learned positions): translate writes one output line per input line,
truncating a longer input with a warning naming its line and capping outputs at the table; train refuses, before
the first update, a table too small for the training (within --max-len) or validation sentences."""
from __future__ import annotations

import pytest

from nmtkit.data.shards import Corpus
from tests.conftest import run

TINY = ["--d-model", 16, "--ffn-size", 16, "--heads", 2, "--enc-layers", 1, "--dec-layers", 1,
        "--valid-max-sentences", 4, "--positions", "learned"]


def longest(corpus_dir) -> int:
    corpus = Corpus.open(corpus_dir)
    return max(n for split in ("train", "valid") for n in corpus.longest(split).values())


@pytest.mark.parametrize("arch", ["transformer", "bitatt-transformer"])
def test_an_input_longer_than_the_positions_is_truncated_and_every_line_gets_its_output(corpus_dir, tmp_path, arch):
    positions = longest(corpus_dir) + 1
    run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "run", "--arch", arch, *TINY,
         "--max-positions", positions, "--max-steps", 1, "--valid-every", 1])
    lines = ["forty-two", " ".join(["seven"] * (positions + 5)), "three hundred", " ".join(["one"] * positions)]
    r = run(["translate", "-m", tmp_path / "run" / "last.pt", "--beam", 2, "--max-len-a", 10],
            input="\n".join(lines) + "\n")
    outputs = r.stdout.split("\n")[:-1]
    assert len(outputs) == 4 and all(len(out.split()) <= positions - 1 for out in outputs)
    assert f"<stdin>:2: {positions + 5} tokens, truncated to {positions - 1} (the most this model reads: its " \
           f"{positions} positions)" in r.stderr
    assert f"<stdin>:4: {positions} tokens, truncated to {positions - 1}" in r.stderr
    assert "\n2 line(s) with an input or prefix cut at a length limit" in r.stderr
    (tmp_path / "prefix.de").write_text(" ".join(["sieben"] * (positions + 5)) + "\n\n\n\n")
    r = run(["translate", "-m", tmp_path / "run" / "last.pt", "--beam", 2, "--prefix-file", tmp_path / "prefix.de"],
            input="\n".join(lines) + "\n")
    assert f"prefix.de:1: {positions + 5} tokens, truncated to" in r.stderr  # (line 1: its prefix alone)
    assert "\n3 line(s) with an input or prefix cut at a length limit" in r.stderr
    model = tmp_path / "run" / "last.pt"
    r = run(["translate", "-m", model, "-m", model, "--beam", 2, "--max-len-a", 10], input="\n".join(lines) + "\n")
    outputs = r.stdout.split("\n")[:-1]  # an ensemble's outputs stop at its members' table too
    assert len(outputs) == 4 and all(len(out.split()) <= positions - 1 for out in outputs)


def test_an_ensemble_truncates_each_models_input_to_what_it_reads(corpus_dir, tmp_path):
    positions = longest(corpus_dir) + 1
    for name, kind in (("learned", ["--max-positions", positions]), ("sinusoidal", ["--positions", "sinusoidal"])):
        run(["train", "--data", corpus_dir, "--save-dir", tmp_path / name, "--arch", "transformer", *TINY, *kind,
             "--max-steps", 1, "--valid-every", 1])
    lines = ["forty-two", " ".join(["seven"] * (positions + 5))]
    r = run(["translate", "-m", tmp_path / "sinusoidal" / "last.pt", "-m", tmp_path / "learned" / "last.pt",
             "--greedy", "--max-len-a", 10], input="\n".join(lines) + "\n")
    assert len(r.stdout.split("\n")[:-1]) == 2
    assert r.stderr.count("<stdin>:2: ") == 1  # the learned model's input alone is truncated
    (tmp_path / "long.en").write_text(lines[1] + "\n")
    (tmp_path / "long.de").write_text("sieben\n")
    r = run(["score", "--metric", "ppl", "-m", tmp_path / "learned" / "last.pt", "--src", tmp_path / "long.en",
             "-r", tmp_path / "long.de"], ok=False)  # perplexity is of whole inputs: never of a truncated one
    assert r.stderr == f"error: {tmp_path / 'long.en'}:1: {positions + 5} tokens, more than {positions - 1} (the " \
        f"most this model reads: its {positions} positions)\n"


def test_positions_too_few_for_the_corpus_are_refused_before_the_first_update(corpus_dir, tmp_path):
    corpus = Corpus.open(corpus_dir)
    train, valid = (max(corpus.longest(split).values()) for split in ("train", "valid"))
    args = ["train", "--data", corpus_dir, "--save-dir", tmp_path / "run", "--arch", "transformer", *TINY,
            "--max-steps", 2, "--valid-every", 1]
    r = run([*args, "--max-positions", train], ok=False)  # one short: the longest and its </s> (or <s>) do not fit
    assert r.exit_code == 2 and "the train set has" in r.stderr and f"give --max-len {train - 1} or a larger " \
        "--max-positions" in r.stderr
    assert not (tmp_path / "run").exists()
    r = run([*args, "--max-positions", valid, "--max-len", valid - 1], ok=False)  # training fits, validation not
    assert r.exit_code == 2 and "the valid set has" in r.stderr and "give a larger --max-positions" in r.stderr
    assert not (tmp_path / "run").exists()


def test_luong_location_attention_reads_as_many_tokens_as_its_limit_says():
    import torch

    from nmtkit.data.batching import make_batch
    from nmtkit.models.luong import Luong

    model = Luong(12, 12, emb_size=8, enc_size=8, dec_size=8, layers=1, global_attention="location",
                  location_max_len=6).eval()
    assert model.input_limit() == 5 and model.output_limit() is None and model.limit_option == "--location-max-len"
    with torch.no_grad():
        model(make_batch([[5] * 5], [[6, 7]]))  # the limit and </s>: six positions
        with pytest.raises(ValueError, match="covers 6 positions; the source has 7"):
            model(make_batch([[5] * 6], [[6, 7]]))
    assert Luong(12, 12, emb_size=8, enc_size=8, dec_size=8, layers=1).input_limit() is None
