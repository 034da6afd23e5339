"""nmtkit translate end to end: one line out per line in, n-best, attention file, errors; models with two inputs
(from two files or TAB-separated fields, post-editing output, their attention and perplexity)."""
import json
import math
import os
import re
import shutil

import pytest
import torch

from nmtkit.checkpoint import load_checkpoint, save_checkpoint
from nmtkit.data.batching import make_batch
from nmtkit.data.edits import apply_edits, edit_operations
from nmtkit.data.vocab import WordVocab
from nmtkit.inference import load_model
from nmtkit.metrics.perplexity import corpus_nll, perplexity
from nmtkit.search.attention_file import AttentionFile
from tests.conftest import TINY_MODEL, pipe, run


def test_translate_stdin_to_stdout_keeps_every_line(trained_ckpt):
    r = run(["translate", "-m", trained_ckpt, "--beam", 3], input=b"forty-two\n\nseven hundred\n")
    lines = r.stdout.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[0] and lines[2] and lines[3] == ""


def test_greedy_equals_beam_one_and_files(trained_ckpt, text_dir, tmp_path):
    run(["translate", "-m", trained_ckpt, "--greedy", "-i", text_dir / "test.en", "-o", tmp_path / "g"])
    run(["translate", "-m", trained_ckpt, "--beam", 1, "--batch-size", 7, "-i", text_dir / "test.en", "-o", tmp_path / "b"])
    assert (tmp_path / "g").read_text() == (tmp_path / "b").read_text()
    assert len((tmp_path / "g").read_text().splitlines()) == 30


def n_best_rows(text: str) -> list[tuple[int, str, float, dict[str, float]]]:
    """``--n-best`` lines: index, text, score and the named features (Moses' fields: index, text, the features as
    ``name= value``, the score)."""
    rows = []
    for line in text.splitlines():
        index, output, features, score = line.split(" ||| ")
        named = dict(zip(features.split()[0::2], features.split()[1::2]))
        assert all(name.endswith("=") for name in named), line
        named = {name[:-1]: value for name, value in named.items()}
        rows.append((int(index), output, float(score), {k: float(v) for k, v in named.items()}))
    return rows


@pytest.mark.parametrize("penalty", [1.0, 0.0])
def test_n_best_format(trained_ckpt, penalty):
    r = run(["translate", "-m", trained_ckpt, "--beam", 4, "--n-best", 3, "--length-penalty", penalty],
            input="forty-two\none\n")
    rows = n_best_rows(r.stdout)
    assert [row[0] for row in rows] == [0, 0, 0, 1, 1, 1] and all(row[2] <= 0 for row in rows)
    assert all(set(features) == {"logprob", "confidence"} for *_, features in rows)
    # the score is log p / length^penalty, the confidence log p / length (</s> counted)
    same = "confidence" if penalty else "logprob"
    assert all(score == pytest.approx(features[same], abs=1e-4) for _, _, score, features in rows)
    assert any(features["confidence"] > features["logprob"] for *_, features in rows)


def test_json_output_has_each_outputs_text_scores_and_confidence(trained_ckpt):
    text = run(["translate", "-m", trained_ckpt, "--beam", 3, "--n-best", 2], input="forty-two\n\none\n").stdout
    out = run(["translate", "-m", trained_ckpt, "--beam", 3, "--n-best", 2, "--output-format", "json"],
              input="forty-two\n\none\n").stdout
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["index"] for line in lines] == [0, 1, 2] and all(len(line["outputs"]) == 2 for line in lines)
    outputs = [o for line in lines for o in line["outputs"]]
    assert [o["text"] for o in outputs] == [row[1] for row in n_best_rows(text)]
    assert lines[1]["outputs"][0] == {"text": "", "score": 0.0, "logprob": 0.0, "confidence": 0.0, "tokens": 0}
    for o in outputs[:2] + outputs[4:]:
        assert o["tokens"] == len(o["text"].split()) + 1 and o["confidence"] == pytest.approx(o["logprob"] / o["tokens"])


def test_attention_out(trained_ckpt, tmp_path):
    r = run(["translate", "-m", trained_ckpt, "--attention-out", tmp_path / "a.h5"], input="forty-two\n\none\n")
    with AttentionFile(tmp_path / "a.h5") as f:
        assert len(f) == 3
        assert f[0]["attention"]["source"].shape == (len(f[0]["tgt_tokens"]), 2)
        assert " ".join(f[2]["tgt_tokens"][:-1]) == r.stdout.splitlines()[2]


def test_an_output_in_place_always_has_its_attention_file(trained_ckpt, tmp_path, monkeypatch):
    """The attention file is finished first: a stop between the two leaves no -o without it (a recipe takes an
    output that is there for done, and went on to read an attention file that was not)."""
    import os

    replace = os.replace

    def stopped(src, dst):  # (the output's rename fails, where a kill could come too)
        if str(dst) == str(tmp_path / "out.de"):
            raise OSError(28, "No space left on device")
        replace(src, dst)

    monkeypatch.setattr(os, "replace", stopped)
    r = run(["translate", "-m", trained_ckpt, "-o", tmp_path / "out.de", "--attention-out", tmp_path / "a.h5"],
            input="one\n", ok=False)
    assert r.stderr == f"error: no space left on device while writing {tmp_path / 'out.de'}\n"
    assert not (tmp_path / "out.de").exists() and (tmp_path / "a.h5").exists()


def test_two_pass_bitatt_translation_writes_target_attention(corpus_dir, trained_ckpt, tmp_path):
    """bitatt-rnn warm-started from rnnsearch, trained briefly, then translated through the same command."""
    run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "bi", *TINY_MODEL, "--arch", "bitatt-rnn",
         "--init-from", trained_ckpt, "--max-steps", 10, "--valid-every", 10, "--batch-size", 16])
    r = run(["translate", "-m", tmp_path / "bi" / "last.pt", "--beam", 3, "--attention-out", tmp_path / "a.h5"],
            input="forty-two\n\nseven hundred one\n")
    assert len(r.stdout.split("\n")) == 4
    with AttentionFile(tmp_path / "a.h5") as f:
        n = len(f[2]["tgt_tokens"])
        assert f[2]["attention"]["source"].shape == (n, 4)
        assert f[2]["attention"]["target"].shape == (n, n - 1)


def test_errors(trained_ckpt, tmp_path):
    (tmp_path / "w.pth").write_text("x")
    r = run(["translate", "-m", trained_ckpt, "--cnn-weights", tmp_path / "w.pth"], input="x\n", ok=False)
    assert r.exit_code == 2 and "--cnn-weights: goes with a model that makes features from images" in r.stderr
    r = run(["translate", "-m", tmp_path / "none.pt"], input="x\n", ok=False)
    assert "none.pt: no such checkpoint" in r.stderr
    (tmp_path / "bad.pt").write_text("junk")
    r = run(["translate", "-m", tmp_path / "bad.pt"], input="x\n", ok=False)
    assert "bad.pt: not a readable nmtkit checkpoint" in r.stderr
    r = run(["translate", "-m", trained_ckpt, "--beam", 2, "--n-best", 3], input="x\n", ok=False)
    assert r.exit_code == 2
    r = run(["translate", "-m", trained_ckpt, "-i", tmp_path / "nope.txt"], ok=False)
    assert "nope.txt: no such file" in r.stderr
    r = run(["translate", "-m", trained_ckpt, "--greedy", "--beam", 4], input="x\n", ok=False)
    assert r.exit_code == 2 and r.stderr == "error: --beam: --greedy searches with one hypothesis (as --beam 1); " \
                                            "give one or the other\n"


def test_flush_serves_a_pipe_line_by_line(trained_ckpt):
    """With --flush each translation comes out before the next line goes in (a co-process)."""
    import select
    import subprocess
    import sys

    code = "import sys; from nmtkit.cli import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", code, "translate", "-m", str(trained_ckpt), "--flush", "--beam", "2"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        for line in (b"forty-two\n", b"\n", b"seven\n"):
            proc.stdin.write(line)
            proc.stdin.flush()
            assert select.select([proc.stdout], [], [], 60)[0], "no output before the input was closed"
            out = proc.stdout.readline()
            assert out.endswith(b"\n") and (out == b"\n") == (line == b"\n")
        proc.stdin.close()
        assert proc.wait(60) == 0 and proc.stdout.read() == b""
    finally:
        proc.kill()


def test_attention_layers_and_heads_are_for_models_that_have_them(trained_ckpt, tmp_path):
    r = run(["translate", "-m", trained_ckpt, "--attention-layer", 1], input="one\n", ok=False)
    assert r.exit_code == 2 and "--attention-layer and --attention-head go with --attention-out" in r.stderr
    r = run(["translate", "-m", trained_ckpt, "--attention-head", 1, "--attention-out", tmp_path / "a.h5"],
            input="one\n", ok=False)
    assert r.exit_code == 2 and "RNNSearch has one attention to give" in r.stderr and not (tmp_path / "a.h5").exists()
    r = run(["translate", "-m", trained_ckpt, "--attention-layer", 1, "--alignments", tmp_path / "a.txt"],
            input="one\n", ok=False)  # (with --alignments, which reads the attention too)
    assert r.exit_code == 2 and "RNNSearch has one attention to give" in r.stderr and not (tmp_path / "a.txt").exists()


def test_an_ensemble_of_two_copies_translates_as_one_model(trained_ckpt, text_dir, tmp_path):
    one = run(["translate", "-m", trained_ckpt, "--beam", 3, "--n-best", 2, "-i", text_dir / "test.en"]).stdout
    two = run(["translate", "-m", trained_ckpt, "-m", trained_ckpt, "--weights", "2,1", "--beam", 3, "--n-best", 2,
               "-i", text_dir / "test.en"]).stdout
    rows = [[line.split(" ||| ") for line in out.splitlines()] for out in (one, two)]
    assert [r[:2] for r in rows[0]] == [r[:2] for r in rows[1]] and len(rows[0]) == 60
    assert [float(r[3]) for r in rows[0]] == pytest.approx([float(r[3]) for r in rows[1]], abs=2e-4)


def test_an_ensemble_of_two_models_writes_the_chosen_ones_attention(corpus_dir, trained_ckpt, tmp_path):
    run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "b", *TINY_MODEL, "--seed", 2, "--max-steps", 30,
         "--valid-every", 30, "--batch-size", 32, "--lr", 0.005])
    other = tmp_path / "b" / "last.pt"
    args = ["translate", "-m", trained_ckpt, "-m", other, "--beam", 3]
    attention = []
    for k in (1, 2):
        out = run([*args, "--attention-out", tmp_path / f"{k}.h5", "--attention-model", k],
                  input="forty-two\n\nseven hundred one\n").stdout.split("\n")
        assert len(out) == 4 and out[1] == "" and out[0] and out[2]
        with AttentionFile(tmp_path / f"{k}.h5") as f:
            assert f.attrs["model"] == f"{trained_ckpt} + {other}"
            assert " ".join(f[2]["tgt_tokens"][:-1]) == out[2]
            attention.append(f[2]["attention"]["source"])
            assert attention[-1].shape == (len(f[2]["tgt_tokens"]), 4)
    assert not (attention[0] == attention[1]).all()  # two models, two attentions (the exact ones: tests/search)
    r = run([*args, "--attention-model", 3], input="one\n", ok=False)
    assert r.exit_code == 2 and "--attention-model: expects 1 to 2 (one per -m), got 3" in r.stderr
    r = run(["translate", "-m", trained_ckpt, "-m", other, "--weights", "1"], input="one\n", ok=False)
    assert r.exit_code == 2 and "--weights: 1 weight(s) for 2 model(s)" in r.stderr
    r = run(["translate", "-m", trained_ckpt, "--weights", "1"], input="one\n", ok=False)
    assert r.exit_code == 2 and "got one model" in r.stderr
    r = run(["translate", "-m", trained_ckpt, "-m", other, "--weights", "1,x"], input="one\n", ok=False)
    assert r.exit_code == 2 and "--weights: expects numbers" in r.stderr


def test_a_shortlist_restricts_the_output_to_its_words(trained_ckpt, text_dir, tmp_path):
    """A table giving every source word every target word of the corpus changes nothing; one giving each source
    word one target word, with no frequent words, yields only those words."""
    src = {w for line in (text_dir / "train.en").read_text().splitlines() for w in line.split()}
    tgt = sorted({w for line in (text_dir / "train.de").read_text().splitlines() for w in line.split()})
    (tmp_path / "all").write_text("".join(f"{s} {t} 0.5\n" for s in sorted(src) for t in tgt))
    (tmp_path / "one").write_text("".join(f"{s} {tgt[i % 3]} 0.5\n" for i, s in enumerate(sorted(src))))
    test = text_dir / "test.en"
    full = run(["translate", "-m", trained_ckpt, "--beam", 3, "-i", test]).stdout
    assert run(["translate", "-m", trained_ckpt, "--beam", 3, "-i", test, "--shortlist", tmp_path / "all",
                "--shortlist-first", 0, "--shortlist-best", 1000]).stdout == full
    short = run(["translate", "-m", trained_ckpt, "--beam", 3, "-i", test, "--shortlist", tmp_path / "one",
                 "--shortlist-first", 0]).stdout.splitlines()
    assert len(short) == 30 and {w for line in short for w in line.split()} <= set(tgt[:3]) | {"<unk>"}
    (tmp_path / "bad").write_text("x y z\n")
    r = run(["translate", "-m", trained_ckpt, "--shortlist", tmp_path / "bad"], input="one\n", ok=False)
    assert r.exit_code == 1 and "bad:1: 'z' is not a number" in r.stderr
    for option in ("--shortlist-first", "--shortlist-best"):  # (ignored without a shortlist: refused)
        r = run(["translate", "-m", trained_ckpt, option, 5], input="one\n", ok=False)
        assert r.exit_code == 2 and r.stderr == f"error: {option}: goes with --shortlist\n" and not r.stdout


SRC = ["forty-two", "", "seven hundred one", "three", "nine"]
MT = ["zwei vierzig", "eins", "sieben hundert", "", "neun"]


@pytest.fixture(scope="module")
def two_inputs(text_dir, tmp_path_factory):
    """The tiny corpus with a second input, 'mt': the German with every third word dropped."""
    root = tmp_path_factory.mktemp("two_inputs")
    for split in ("train", "valid", "test"):
        for lang in ("en", "de"):
            shutil.copy(text_dir / f"{split}.{lang}", root / f"{split}.{lang}")
        german = (text_dir / f"{split}.de").read_text().splitlines()
        mt = [" ".join(w for k, w in enumerate(line.split()) if k % 3 != 2) for line in german]
        (root / f"{split}.mt").write_text("".join(line + "\n" for line in mt))
    (root / "a").write_text("".join(line + "\n" for line in SRC))
    (root / "b").write_text("".join(line + "\n" for line in MT))
    return root


def train_two_sources(root, save, *extra):
    """A multi-source model (inputs src = en, mt) trained briefly on ``root``'s corpus; its checkpoint."""
    run(["preprocess", "--train", root / "train", "--valid", root / "valid", "--test", root / "test", "--src", "en",
         "--src", "mt=mt", "--tgt", "de", "--vocab", "word:200", *extra, "-o", save / "data"])
    run(["train", "--data", save / "data", "--arch", "multi-source", "--save-dir", save / "run", *TINY_MODEL,
         "--sentinel", "--max-steps", 40, "--valid-every", 40, "--lr", 0.01, "--batch-size", 32])
    return save / "run" / "last.pt"


@pytest.fixture(scope="module")
def two_source_ckpt(two_inputs, tmp_path_factory):
    return train_two_sources(two_inputs, tmp_path_factory.mktemp("multi_source"))


@pytest.fixture(scope="module")
def ape_ckpt(two_inputs, tmp_path_factory):
    """The same, trained to post-edit mt: its outputs are edit operations on mt's words."""
    return train_two_sources(two_inputs, tmp_path_factory.mktemp("ape"), "--ape-edits", "mt")


def test_two_inputs_from_two_files_or_tab_separated_fields(two_source_ckpt, two_inputs, tmp_path):
    a, b = two_inputs / "a", two_inputs / "b"
    out = run(["translate", "-m", two_source_ckpt, "-i", a, "-i", b, "--beam", 3, "--attention-out",
               tmp_path / "a.h5"]).stdout
    lines = out.split("\n")
    assert len(lines) == 6 and lines[1] == lines[3] == lines[5] == "" and lines[0] and lines[2] and lines[4]
    fields = "".join(f"{s}\t{m}\n" for s, m in zip(SRC, MT))
    assert run(["translate", "-m", two_source_ckpt, "--fields", "--beam", 3], input=fields).stdout == out
    (tmp_path / "in.tsv").write_text(fields)
    assert run(["translate", "-m", two_source_ckpt, "--fields", "-i", tmp_path / "in.tsv", "--beam", 3]).stdout == out
    blank = run(["translate", "-m", two_source_ckpt, "--fields", "--beam", 3],
                input="\n \n\t \t\n" + fields.split("\n")[0] + "\n")
    assert blank.stdout == f"\n\n\n{lines[0]}\n" and "warning" not in blank.stderr  # (a blank line: empty inputs)
    swapped = run(["translate", "-m", two_source_ckpt, "-i", a, "-i", a, "--beam", 3]).stdout
    assert swapped != out  # the second input counts
    (tmp_path / "bad").write_bytes(b.read_bytes().replace(b"\n", b"\xff\n", 1))
    r = run(["translate", "-m", two_source_ckpt, "-i", a, "-i", tmp_path / "bad"], ok=False)
    assert f"{tmp_path / 'bad'}:1: invalid UTF-8" in r.stderr  # (each input's messages name its own file)
    with AttentionFile(tmp_path / "a.h5") as f:
        assert len(f) == 5 and f.inputs == ["src", "mt"]
        s = f[2]
        assert s["src_tokens"] == ["seven", "hundred", "one", "</s>"]
        assert s["input_tokens"] == {"mt": ["sieben", "hundert", "</s>"]}
        assert " ".join(s["tgt_tokens"][:-1]) == lines[2]
        n = len(s["tgt_tokens"])
        assert s["attention"]["source"].shape == (n, 4) and s["attention"]["source.mt"].shape == (n, 3)
        assert s["attention"]["encoders"].shape == (n, 3) and len(s["labels"]["encoders"]) == 3
        assert f[1]["input_tokens"] == {} and f[1]["tgt_tokens"] == []


def test_inputs_may_be_pipes_read_once(two_source_ckpt, trained_ckpt, two_inputs, text_dir, tmp_path):
    """``-i <(command)`` or ``-i /dev/stdin``: a pipe is read once, and inputs side by side are checked as they are
    read (a pipe cannot be counted first)."""
    a, b = two_inputs / "a", two_inputs / "b"
    out = run(["translate", "-m", two_source_ckpt, "-i", a, "-i", b, "--beam", 3]).stdout
    piped = run(["translate", "-m", two_source_ckpt, "-i", pipe(tmp_path / "pa", a.read_text()), "-i",
                 pipe(tmp_path / "pb", b.read_text()), "--beam", 3]).stdout
    assert piped == out
    r = run(["translate", "-m", two_source_ckpt, "-i", pipe(tmp_path / "qa", a.read_text()), "-i",
             pipe(tmp_path / "qb", "eins\n"), "-o", tmp_path / "out"], ok=False)
    assert r.exit_code == 2 and r.stderr.endswith(f"error: -i {tmp_path / 'qb'}: 1 line(s), fewer than the input's\n")
    assert not (tmp_path / "out").exists()
    one = run(["translate", "-m", trained_ckpt, "-i", text_dir / "test.en"]).stdout
    assert run(["translate", "-m", trained_ckpt, "-i", pipe(tmp_path / "p", (text_dir / "test.en").read_text())
                ]).stdout == one


def test_plot_attn_draws_each_input(two_source_ckpt, two_inputs, tmp_path):
    run(["translate", "-m", two_source_ckpt, "-i", two_inputs / "a", "-i", two_inputs / "b", "--attention-out",
         tmp_path / "a.h5"])
    for stream in ("mt", "src", None):
        run(["plot-attn", tmp_path / "a.h5", "--index", 2, *(["--input", stream] if stream else []),
             "-o", tmp_path / f"{stream}.png"])
    figure = lambda stream: (tmp_path / f"{stream}.png").read_bytes()
    assert figure("src") == figure(None) != figure("mt")  # the first input is the default
    r = run(["plot-attn", tmp_path / "a.h5", "--index", 2, "--input", "image", "-o", tmp_path / "x.png"], ok=False)
    assert "sentence 2 has no 'source.image' attention (it has: encoders, source, source.mt)" in r.stderr
    for stream in ("mt", "src"):  # (the first input too, though its attention is the default one)
        r = run(["plot-attn", tmp_path / "a.h5", "--index", 2, "--input", stream, "--kind", "encoders",
                 "-o", tmp_path / "x.png"], ok=False)
        assert r.exit_code == 2 and "--input goes with --kind source" in r.stderr
        assert not (tmp_path / "x.png").exists()
    run(["plot-attn", tmp_path / "a.h5", "--index", 2, "--kind", "encoders", "-o", tmp_path / "enc.png"])  # Fig. 2
    with AttentionFile(tmp_path / "a.h5") as f:
        sentence = f[2]
    weights = sentence["attention"]["encoders"]  # [output tokens, src + mt + sentinel]
    assert sentence["labels"]["encoders"] == ["src", "mt", "sentinel"] and weights.shape[1] == 3
    assert abs(weights.sum(1) - 1).max() < 1e-5 and (tmp_path / "enc.png").stat().st_size > 0


def test_a_fields_line_with_the_wrong_number_of_fields_gets_an_empty_line(two_source_ckpt):
    r = run(["translate", "-m", two_source_ckpt, "--fields"], input="forty-two\tzwei\nseven\n\tx\ty\nthree\tdrei\n",
            ok=False)
    lines = r.stdout.split("\n")
    assert r.exit_code == 1 and len(lines) == 5 and lines[1] == lines[2] == "" and lines[0] and lines[3]
    assert "<stdin>:2: 1 TAB-separated field(s), expected 2 (src, mt); writing an empty line" in r.stderr
    assert "error: <stdin>: 2 line(s) with the wrong number of fields (line 2, 3)" in r.stderr


def test_what_to_give_a_model_with_two_inputs(two_source_ckpt, trained_ckpt, two_inputs, tmp_path):
    a, b = two_inputs / "a", two_inputs / "b"
    expect = "-i: this multi-source model reads 2 input(s), src, mt: give one -i FILE for each, in this order, or " \
             "their TAB-separated fields with --fields (got {})"
    for given, stdin in (([a], None), ([], "x\n"), ([a, b, a], None)):
        r = run(["translate", "-m", two_source_ckpt, *[x for p in given for x in ("-i", p)]], input=stdin, ok=False)
        assert r.exit_code == 2 and r.stderr == f"error: {expect.format(len(given))}\n"
    r = run(["translate", "-m", trained_ckpt, "-i", a, "-i", a], ok=False)
    assert r.exit_code == 2 and "-i: this rnnsearch model reads 1 input(s), src: give one -i FILE" in r.stderr
    r = run(["translate", "-m", two_source_ckpt, "--fields", "-i", a, "-i", b], ok=False)
    assert r.exit_code == 2 and "--fields: the fields come from one input" in r.stderr
    (tmp_path / "short").write_text("one\n")
    r = run(["translate", "-m", two_source_ckpt, "-i", a, "-i", tmp_path / "short", "-o", tmp_path / "out",
             "--attention-out", tmp_path / "a.h5"], ok=False)
    assert r.exit_code == 2 and r.stderr == (f"error: -i {tmp_path / 'short'}: 1 line(s), but the input {a} has 5; "
                                             "the files read side by side must have as many lines each\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["short"]
    (tmp_path / "bad").write_bytes(b"eins\n\xff\n\nvier\nfunf\n")
    r = run(["translate", "-m", two_source_ckpt, "-i", a, "-i", tmp_path / "bad"], ok=False)
    assert r.exit_code == 1 and r.stdout.count("\n") == 5 and r.stdout.split("\n")[2] == ""
    assert f"{tmp_path / 'bad'}:2: invalid UTF-8" in r.stderr
    assert f"error: {a} + {tmp_path / 'bad'}: 1 line(s) of invalid UTF-8 (line 2)" in r.stderr
    r = run(["translate", "-m", two_source_ckpt, "-i", a, "-i", tmp_path / "bad", "--output-format", "json"], ok=False)
    assert [json.loads(line).get("unusable") for line in r.stdout.splitlines()] == [None, True, None, None, None]


def test_an_input_of_old_mac_line_endings_is_warned_of(trained_ckpt, text_dir, tmp_path):
    """(its lines were read as one, translated as one output line, without a word)"""
    lines = (text_dir / "test.en").read_text().splitlines()[:4]
    (tmp_path / "mac.en").write_text("\r".join(lines) + "\n")
    r = run(["translate", "-m", trained_ckpt, "-i", tmp_path / "mac.en", "--greedy"])
    assert r.stdout.count("\n") == 1 and (f"warning: {tmp_path / 'mac.en'}: 3 carriage returns (\\r) without a newline "
                                         "after them, in 1 line(s): lines end at a newline (\\n) alone here") in r.stderr
    (tmp_path / "crlf.en").write_text("".join(f"{line} \r x\r\n" for line in lines))  # (one stray a line, and CRLF)
    assert "carriage returns" not in run(["translate", "-m", trained_ckpt, "-i", tmp_path / "crlf.en", "--greedy"]).stderr


def test_inputs_mostly_unknown_to_the_model_are_warned_of(trained_ckpt, two_source_ckpt, text_dir, tmp_path):
    """Over half of an input's tokens <unk> (of at least 20): text of another language, or inputs swapped."""
    r = run(["translate", "-m", trained_ckpt, "-i", text_dir / "test.de", "--greedy"])
    assert r.stdout.count("\n") == 30 and f"warning: {text_dir / 'test.de'}: " in r.stderr
    assert "tokens are <unk> in the model's src vocabulary: is it the text the model reads as src?\n" in r.stderr
    assert "<unk>" not in run(["translate", "-m", trained_ckpt, "-i", text_dir / "test.en", "--greedy"]).stderr
    (tmp_path / "a").write_text("".join(f"{s}\n" for s in SRC * 6))
    (tmp_path / "b").write_text("".join(f"{m}\n" for m in MT * 6))
    assert "<unk>" not in run(["translate", "-m", two_source_ckpt, "-i", tmp_path / "a", "-i", tmp_path / "b"]).stderr
    r = run(["translate", "-m", two_source_ckpt, "-i", tmp_path / "b", "-i", tmp_path / "a"])
    assert f"warning: {tmp_path / 'b'}: " in r.stderr and "is it the text the model reads as src? (a model of several " \
        "inputs reads them in its order: src, mt)" in r.stderr


def test_a_post_editing_model_writes_its_edits_applied_to_the_mt(ape_ckpt, two_inputs, tmp_path):
    a, b = two_inputs / "a", two_inputs / "b"
    out = run(["translate", "-m", ape_ckpt, "-i", a, "-i", b, "--beam", 3, "--attention-out", tmp_path / "a.h5"])
    lines = out.stdout.splitlines()
    with AttentionFile(tmp_path / "a.h5") as f:
        ops = [" ".join(f[k]["tgt_tokens"][:-1]) for k in range(len(f))]
    assert any("<keep>" in o or "<delete>" in o for o in ops)  # the model's own output: edit operations
    assert lines == [apply_edits(mt, o) if src and mt else "" for src, mt, o in zip(SRC, MT, ops)]
    nbest = run(["translate", "-m", ape_ckpt, "--fields", "--beam", 3, "--n-best", 2],
                input="".join(f"{s}\t{m}\n" for s, m in zip(SRC, MT))).stdout.splitlines()
    texts = [row.split(" ||| ")[1] for row in nbest]
    assert len(texts) == 10 and texts[0::2] == lines
    assert not any("<keep>" in t or "<delete>" in t for t in texts)


def test_edit_costs_make_a_post_editing_model_conservative(ape_ckpt, trained_ckpt, two_inputs, tmp_path):
    a, b = two_inputs / "test.en", two_inputs / "test.mt"
    mt = b.read_text().splitlines()
    checkpoint = load_checkpoint(ape_ckpt)  # the tiny model keeps the MT as it is: made to insert "und" everywhere
    und = WordVocab(checkpoint["vocab"]["tgt"]["tokens"]).encode("und")[0]
    checkpoint["model"]["decoder.readout.output.bias"][und] += 10.0
    eager = tmp_path / "eager.pt"
    save_checkpoint(eager, checkpoint)
    plain = run(["translate", "-m", eager, "-i", a, "-i", b, "--beam", 3]).stdout
    assert plain.splitlines() != mt  # it edits
    assert run(["translate", "-m", eager, "-i", a, "-i", b, "--beam", 3, "--edit-cost", 0]).stdout == plain
    for search in (["--beam", 3], ["--greedy"]):  # edits too dear: the MT as it is
        out = run(["translate", "-m", eager, "-i", a, "-i", b, *search, "--edit-cost", 1e6]).stdout
        assert out.splitlines() == mt
    r = run(["translate", "-m", trained_ckpt, "--edit-cost", 1], input="1 2\n", ok=False)
    assert r.exit_code == 2 and r.stderr.splitlines() == [
        "error: --edit-cost: this rnnsearch model outputs text, not edit operations (a post-editing model's corpus "
        "is made with preprocess --ape-edits)"]
    (tmp_path / "lex").write_text("1 eins\n")
    r = run(["translate", "-m", ape_ckpt, "-i", a, "-i", b, "--edit-cost", 1, "--shortlist", tmp_path / "lex"], ok=False)
    assert r.exit_code == 2 and "--edit-cost: post-editing models decode without --shortlist" in r.stderr
    r = run(["translate", "-m", ape_ckpt, "-i", a, "-i", b, "--edit-cost", -1], ok=False)
    assert r.exit_code == 2 and "--edit-cost" in r.stderr


def test_perplexity_of_a_post_editing_model_scores_the_edit_operations(ape_ckpt, two_inputs, tmp_path):
    """Its outputs are edit operations on mt: the reference post-edits are scored as the operations that make them;
    a post-edit holding an operation's name cannot be, and is a one-line error naming its line."""
    root = two_inputs
    files = ["--src", root / "test.en", "--src", root / "test.mt"]
    r = run(["score", "--metric", "ppl", "-m", ape_ckpt, *files, "-r", root / "test.de", "--score-only"])
    loaded = load_model(ape_ckpt)
    text = {name: (root / f"test.{name}").read_text().splitlines() for name in ("en", "mt", "de")}
    batch = make_batch({"src": [loaded.vocabs["src"].encode(x) for x in text["en"]],
                        "mt": [loaded.vocabs["mt"].encode(x) for x in text["mt"]]},
                       [loaded.tgt_vocab.encode(edit_operations(m, d)) for m, d in zip(text["mt"], text["de"])])
    with torch.no_grad():
        expected = perplexity(*corpus_nll(loaded.model, [batch], "cpu"))
    assert math.isfinite(expected) and float(r.stdout) == pytest.approx(expected, rel=1e-4)
    bad = text["de"][:]
    bad[2] = "<keep> " + bad[2]
    (tmp_path / "bad.de").write_text("".join(line + "\n" for line in bad))
    r = run(["score", "--metric", "ppl", "-m", ape_ckpt, *files, "-r", tmp_path / "bad.de"], ok=False)
    assert r.exit_code == 1 and f"{tmp_path / 'bad.de'}:3: the post-edit word '<keep>'" in r.stderr


def test_perplexity_of_a_model_with_two_inputs(two_source_ckpt, two_inputs):
    root = two_inputs
    r = run(["score", "--metric", "ppl", "-m", two_source_ckpt, "--src", root / "test.en", "--src", root / "test.mt",
             "-r", root / "test.de", "--score-only", "--batch-size", 7])
    loaded = load_model(two_source_ckpt)
    text = {name: (root / f"test.{name}").read_text().splitlines() for name in ("en", "mt", "de")}
    batch = make_batch({"src": [loaded.vocabs["src"].encode(x) for x in text["en"]],
                        "mt": [loaded.vocabs["mt"].encode(x) for x in text["mt"]]},
                       [loaded.tgt_vocab.encode(x) for x in text["de"]])
    with torch.no_grad():
        expected = perplexity(*corpus_nll(loaded.model, [batch], "cpu"))
    assert math.isfinite(expected) and float(r.stdout) == pytest.approx(expected, rel=1e-4)
    r = run(["score", "--metric", "ppl", "-m", two_source_ckpt, "--src", root / "test.en", "-r", root / "test.de"],
            ok=False)
    assert r.exit_code == 2 and "--src: this multi-source model reads 2 input(s), src, mt: give one --src FILE" in r.stderr
    r = run(["score", "--metric", "ppl", "-m", two_source_ckpt, "--src", root / "test.en", "--src", root / "valid.mt",
             "-r", root / "test.de"], ok=False)
    assert f"{root / 'test.en'} has 30 lines but {root / 'valid.mt'} has 40" in r.stderr


@pytest.fixture(scope="module")
def multimodal_ckpt(tmp_path_factory):
    """A multi-source model over text and image features (a random VGG16 at 32 px) trained briefly; its folder."""
    from tests.data.test_multimodal import trained_multimodal

    return trained_multimodal(tmp_path_factory.mktemp("multimodal"), "--decoder-cell", "cgru", "--max-steps", 6,
                              "--valid-every", 6)


def test_multimodal_translation_from_image_paths_or_precomputed_features(multimodal_ckpt, tmp_path):
    import numpy as np

    from nmtkit.data.images import ImageSpec, load_image

    root = multimodal_ckpt
    ckpt, en, img = root / "run" / "last.pt", root / "data" / "test.en", root / "data" / "test.img"
    from_paths = run(["translate", "-m", ckpt, "-i", en, "-i", img, "--beam", 2, "--attention-out", tmp_path / "p.h5"]).stdout
    assert len(from_paths.split("\n")) == 3
    cnn = ImageSpec(size=32).network()
    with torch.inference_mode():
        rows = np.stack([cnn(load_image(p, 32)[None])[0].numpy() for p in img.read_text().split()])
    np.save(tmp_path / "test.npy", rows)
    assert run(["translate", "-m", ckpt, "-i", en, "--features", tmp_path / "test.npy", "--beam", 2, "--attention-out",
                tmp_path / "f.h5"]).stdout == from_paths
    with AttentionFile(tmp_path / "p.h5") as p, AttentionFile(tmp_path / "f.h5") as f:
        for i in range(2):  # the image attention reads each line's own features
            assert np.allclose(p[i]["attention"]["source.image"], f[i]["attention"]["source.image"], atol=1e-6)
            assert p[i]["input_tokens"] == f[i]["input_tokens"] == {"image": ["r0c0", "r0c1", "r1c0", "r1c1"]}

    def ppl(*src):  # score reads the image input from paths or from a features file, the same way
        return run(["score", "--metric", "ppl", "-m", ckpt, *[x for s in src for x in ("--src", s)], "-r",
                    root / "data" / "test.de", "--score-only"]).stdout

    assert ppl(en, img) == ppl(en, tmp_path / "test.npy") == ppl(tmp_path / "test.npy", en)
    (tmp_path / "gap.img").write_text(img.read_text().split("\n")[0] + "\n\n")  # (no image for line 2)
    r = run(["score", "--metric", "ppl", "-m", ckpt, "--src", en, "--src", tmp_path / "gap.img", "-r",
             root / "data" / "test.de"], ok=False)
    assert r.exit_code == 1 and r.stderr == (f"error: {en} + {tmp_path / 'gap.img'}:2: no image named: an unusable "
                                             "input for perplexity\n")
    (tmp_path / "gap.img").write_text(img.read_text().split("\n")[0] + "\nnone.png\n")
    r = run(["score", "--metric", "ppl", "-m", ckpt, "--src", en, "--src", tmp_path / "gap.img", "-r",
             root / "data" / "test.de"], ok=False)
    assert r.exit_code == 1 and r.stderr == f"error: {tmp_path / 'gap.img'}:2: none.png: no such image\n"
    np.save(tmp_path / "short.npy", rows[:1])
    r = run(["translate", "-m", ckpt, "-i", en, "--features", tmp_path / "short.npy", "-o", tmp_path / "o"], ok=False)
    assert r.exit_code == 2 and "expected an array [2 lines, grid, D]" in r.stderr and not (tmp_path / "o").exists()
    r = run(["translate", "-m", ckpt, "--features", tmp_path / "short.npy"], input="a red disc\nthe blue disc\n", ok=False)
    assert r.exit_code == 1 and r.stdout.split("\n")[1] == "" and "line(s) without features (line 2)" in r.stderr
    np.save(tmp_path / "long.npy", np.concatenate([rows, rows]))
    r = run(["translate", "-m", ckpt, "--features", tmp_path / "long.npy"], input="a red disc\nthe blue disc\n",
            ok=False)  # (rows left over: the rows and the lines may not be of the same images)
    assert r.exit_code == 1 and r.stdout.count("\n") == 2 and r.stderr.endswith(
        f"error: --features {tmp_path / 'long.npy'}: 4 rows, but the input had 2 line(s): rows 3-4 left unread (are "
        "they of the same images?)\n")
    np.save(tmp_path / "long.npy", np.concatenate([rows, rows[:1]]))
    r = run(["translate", "-m", ckpt, "--features", tmp_path / "long.npy"], input="a red disc\nthe blue disc\n",
            ok=False)
    assert r.exit_code == 1 and "3 rows, but the input had 2 line(s): row 3 left unread" in r.stderr
    for bad in (rows.astype(np.int64), rows.astype(np.complex64), rows[:, :0], np.array([["x"] * 4] * 2)[..., None]):
        np.save(tmp_path / "bad.npy", bad)
        r = run(["translate", "-m", ckpt, "-i", en, "--features", tmp_path / "bad.npy"], ok=False)
        assert r.exit_code == 2 and r.stderr.count("\n") == 1 and (
            "expected floating-point numbers" in r.stderr or "of no grid cell" in r.stderr), r.stderr
    r = run(["translate", "-m", ckpt, "-i", en, "-i", img, "--features", tmp_path / "test.npy"], ok=False)
    assert r.exit_code == 2 and "this multi-source model reads 1 input(s), src: give one -i FILE" in r.stderr
    r = run(["translate", "-m", ckpt, "-i", en, "--features", tmp_path / "test.npy", "--cnn-weights", en], ok=False)
    assert r.exit_code == 2 and r.stderr.endswith("error: --cnn-weights: goes with a model that makes features from "
                                                  "images (not with --features)\n")


@pytest.fixture(scope="module")
def unk_ckpt(text_dir, tmp_path_factory):
    """A model whose target vocabulary holds 8 words, so that it writes <unk> often."""
    root = tmp_path_factory.mktemp("unk")
    run(["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
         "--vocab", "word:12", "-o", root / "data"])
    run(["train", "--data", root / "data", "--save-dir", root / "run", *TINY_MODEL, "--max-steps", 40,
         "--valid-every", 40, "--lr", 0.01, "--batch-size", 32])
    return root / "run" / "last.pt"


@pytest.mark.parametrize("n_best", [1, 2])
def test_replace_unk_in_translate_is_translate_then_replace_unk(unk_ckpt, text_dir, tmp_path, n_best):
    """translate --replace-unk writes what translate --attention-out, then replace-unk, write (from the dictionary
    or copied); every n-best entry is replaced."""
    (tmp_path / "lex.tsv").write_text("one\teins\t0.9\ntwo\tzwei\t0.8\n")
    src = text_dir / "test.en"
    plain = run(["translate", "-m", unk_ckpt, "--beam", 3, "-i", src, "--attention-out", tmp_path / "a.h5"]).stdout
    assert plain.count("<unk>") > 10
    piped = run(["replace-unk", "--src", src, "--attention", tmp_path / "a.h5", "--dict", tmp_path / "lex.tsv"],
                input=plain).stdout
    r = run(["translate", "-m", unk_ckpt, "--beam", 3, "-i", src, "--replace-unk", "--dict", tmp_path / "lex.tsv",
             "--n-best", n_best])
    if n_best == 1:
        assert r.stdout == piped and "<unk>" not in r.stdout
        assert "eins" in r.stdout or "zwei" in r.stdout
    else:
        rows = [row.split(" ||| ") for row in r.stdout.splitlines()]
        assert [row[1] for row in rows[0::2]] == piped.splitlines() and "<unk>" not in r.stdout
    said = re.search(rf"replaced (\d+) <unk> in {30 * n_best} outputs: (\d+) from the dictionary, (\d+) copied",
                     r.stderr)
    assert said and int(said[1]) == int(said[2]) + int(said[3]) and int(said[2]) and int(said[3])
    if n_best == 1:
        assert int(said[1]) == plain.count("<unk>")


def test_replace_unk_errors(trained_ckpt, text_dir, tmp_path):
    r = run(["translate", "-m", trained_ckpt, "--dict", tmp_path / "lex.tsv"], input="one\n", ok=False)
    assert r.exit_code == 2 and "--dict goes with --replace-unk" in r.stderr
    run(["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
         "--vocab", "spm:60", "-o", tmp_path / "data"])
    run(["train", "--data", tmp_path / "data", "--save-dir", tmp_path / "run", *TINY_MODEL, "--max-steps", 2,
         "--valid-every", 2])
    r = run(["translate", "-m", tmp_path / "run" / "last.pt", "--replace-unk"], input="one\n", ok=False)
    assert r.exit_code == 2 and "--replace-unk: needs word vocabularies" in r.stderr and not r.stdout


def test_replace_unk_refuses_an_ensemble_reading_the_source_two_ways(unk_ckpt, text_dir, tmp_path):
    """Two models with one target vocabulary and two source vocabularies: their attention covers different
    positions, so whose words would an <unk> copy? A one-line error."""
    data = unk_ckpt.parent.parent / "data"
    (tmp_path / "src.txt").write_text("".join(w + "\n" for w in ["one", "two", "three", "four", "five", "six"]))
    run(["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
         "--src-vocab", tmp_path / "src.txt", "--tgt-vocab", data / "vocab.tgt.txt", "-o", tmp_path / "data"])
    run(["train", "--data", tmp_path / "data", "--save-dir", tmp_path / "run", *TINY_MODEL, "--max-steps", 2,
         "--valid-every", 2])
    both = ["translate", "-m", unk_ckpt, "-m", tmp_path / "run" / "last.pt"]
    assert run(both, input="one two\n").stdout.count("\n") == 1  # an ensemble it is
    r = run([*both, "--replace-unk"], input="one two\n", ok=False)
    assert r.exit_code == 2 and "the ensemble's models read the source differently" in r.stderr
    # (--alignments from the second model's attention read it over the first's words: links to other words)
    assert run([*both, "--alignments", tmp_path / "one.al"], input="one two\n").stdout.count("\n") == 1
    r = run([*both, "--alignments", tmp_path / "two.al", "--attention-model", 2], input="one two\n", ok=False)
    assert r.exit_code == 2 and r.stderr.strip().splitlines()[-1] == (
        "error: --alignments: the ensemble's model 2 (--attention-model) reads src otherwise than the first (another "
        "vocabulary or length limit), so its attention is over other positions than the first's words; give "
        "--attention-model of a model that reads it as the first does")


def test_sampling_draws_one_output_a_line_the_same_for_a_seed(trained_ckpt, text_dir):
    src = text_dir / "test.en"
    lines = src.read_text().splitlines()
    runs = [run(["translate", "-m", trained_ckpt, "-i", src, "--sampling", "--temperature", 3, "--seed", seed]).stdout
            for seed in (1, 1, 2)]
    assert runs[0] == runs[1] != runs[2] and len(runs[2].splitlines()) == len(lines)
    greedy = run(["translate", "-m", trained_ckpt, "-i", src, "--greedy"]).stdout
    assert run(["translate", "-m", trained_ckpt, "-i", src, "--sampling", "--sampling-topk", 1]).stdout == greedy


def test_sampling_errors(trained_ckpt):
    for args, message in ((["--temperature", 2], "--sampling-topk, --temperature and --seed go with --sampling"),
                          (["--seed", 3], "--sampling-topk, --temperature and --seed go with --sampling"),
                          (["--sampling", "--beam", 5], "--beam: --sampling draws its outputs instead of searching"),
                          (["--sampling", "--length-penalty", 0],
                           "--length-penalty: --sampling draws its outputs instead of searching"),
                          (["--sampling", "--n-best", 2], "--n-best: --sampling draws one output a line"),
                          (["--sampling", "--temperature", 0], "--temperature: expects a number in (0, 100]")):
        r = run(["translate", "-m", trained_ckpt, *args], input="one\n", ok=False)
        assert r.exit_code == 2 and message in r.stderr, r.stderr


def test_a_prefix_file_starts_each_output_with_its_line(trained_ckpt, tmp_path):
    (tmp_path / "in.en").write_text("forty-two\nseven\none\n")
    (tmp_path / "pre.de").write_text("neun\n\ndrei vier\n")
    plain = run(["translate", "-m", trained_ckpt, "-i", tmp_path / "in.en"]).stdout.splitlines()
    for extra in ([], ["--greedy"], ["--sampling", "--seed", "3"]):
        out = run(["translate", "-m", trained_ckpt, "-i", tmp_path / "in.en", "--prefix-file", tmp_path / "pre.de",
                   *extra]).stdout.splitlines()
        assert out[0].startswith("neun ") and out[2].startswith("drei vier")
        if not extra:
            assert out[1] == plain[1] and out[0] != plain[0]
    piped = run(["translate", "-m", trained_ckpt, "--prefix-file", tmp_path / "pre.de"],
                input=(tmp_path / "in.en").read_text()).stdout.splitlines()
    assert piped == run(["translate", "-m", trained_ckpt, "-i", tmp_path / "in.en", "--prefix-file",
                         tmp_path / "pre.de"]).stdout.splitlines()


def test_a_prefix_file_of_another_length_is_one_line(trained_ckpt, tmp_path):
    (tmp_path / "pre.de").write_text("neun\n")
    r = run(["translate", "-m", trained_ckpt, "--prefix-file", tmp_path / "pre.de"], input="one\ntwo\n", ok=False)
    assert r.exit_code == 2 and r.stderr.strip().endswith("1 line(s), fewer than the input's")
    r = run(["translate", "-m", trained_ckpt, "--prefix-file", tmp_path / "pre.de"], input="", ok=False)
    assert r.exit_code == 2 and "more lines than the input's 0" in r.stderr
    (tmp_path / "in.en").write_text("one\ntwo\n")
    r = run(["translate", "-m", trained_ckpt, "-i", tmp_path / "in.en", "--prefix-file", tmp_path / "pre.de",
             "-o", tmp_path / "out.de"], ok=False)
    assert r.exit_code == 2 and r.stderr.startswith(f"error: --prefix-file {tmp_path / 'pre.de'}: 1 line(s), but the "
                                                    f"input {tmp_path / 'in.en'} has 2;")
    assert not (tmp_path / "out.de").exists()


def test_outputs_do_not_depend_on_the_batch_size(trained_ckpt, text_dir):
    outputs = [n_best_rows(run(["translate", "-m", trained_ckpt, "-i", text_dir / "test.en", "--n-best", 2,
                                "--batch-size", size]).stdout) for size in (1, 7, 32)]
    for other in outputs[1:]:
        assert [row[:2] for row in other] == [row[:2] for row in outputs[0]]
        assert [row[2] for row in other] == pytest.approx([row[2] for row in outputs[0]], abs=2e-4)


def test_alignments_link_every_output_word_to_a_word_of_its_input(trained_ckpt, tmp_path):
    lines = ["seven hundred forty-two", "", "one"]
    r = run(["translate", "-m", trained_ckpt, "--alignments", tmp_path / "links", "--output-format", "json"],
            input="\n".join(lines) + "\n")
    links = (tmp_path / "links").read_text().split("\n")
    assert len(links) == 4 and links[1] == "" and links[3] == ""
    outputs = [json.loads(row)["outputs"][0] for row in r.stdout.splitlines()]
    for line, output, alignment in zip(lines, outputs, links):
        assert output.get("alignment") == alignment
        pairs = [tuple(map(int, pair.split("-"))) for pair in alignment.split()]
        assert sorted(set(pairs)) == pairs
        assert {j for _, j in pairs} == set(range(len(output["text"].split())))  # every output word, once linked
        assert all(i < len(line.split()) for i, _ in pairs)
    plain = run(["translate", "-m", trained_ckpt], input="\n".join(lines) + "\n").stdout.splitlines()
    assert [o["text"] for o in outputs] == plain  # aligning changes no output
    r = run(["translate", "-m", trained_ckpt, "--alignments", tmp_path / "links", "--n-best", 2],
            input="\n".join(lines) + "\n")
    rows = [row.split(" ||| ") for row in r.stdout.splitlines()]
    assert len(rows) == 6 and all(len(row) == 5 for row in rows)  # (Moses: each output's alignment last)
    assert [row[4] for row in rows[0::2]] == links[:3] and (tmp_path / "links").read_text().split("\n") == links


def test_constraints_put_their_phrases_in_the_outputs(trained_ckpt, tmp_path):
    (tmp_path / "in.en").write_text("forty-two\nseven\none\n")
    (tmp_path / "c.jsonl").write_text('["neun"]\n\n["drei", "acht und"]\n')
    for extra in ([], ["--greedy"], ["--n-best", 2, "--output-format", "json"]):
        mode = extra if extra == ["--greedy"] else []
        plain = run(["translate", "-m", trained_ckpt, "-i", tmp_path / "in.en", *mode]).stdout.splitlines()
        r = run(["translate", "-m", trained_ckpt, "-i", tmp_path / "in.en", "--constraints", tmp_path / "c.jsonl",
                 *extra])
        if extra[-1:] == ["json"]:
            out = [json.loads(row)["outputs"][0]["text"] for row in r.stdout.splitlines()]
        else:
            out = r.stdout.splitlines()
        assert "neun" in out[0].split() and {"drei", "acht"} <= set(out[2].split()) and "acht und" in out[2]
        assert out[1] == plain[1] and "no output could hold" not in r.stderr and "vocabulary" not in r.stderr
    both = run(["translate", "-m", trained_ckpt, "-i", tmp_path / "in.en", "--constraints", tmp_path / "c.jsonl",
                "--prefix-file", tmp_path / "in.en"])  # (English words: <unk> prefixes)
    assert len(both.stdout.splitlines()) == 3 and "neun" in both.stdout.splitlines()[0].split()
    assert f"--prefix-file {tmp_path / 'in.en'}:2: 'seven' not in the target vocabulary: the output holds <unk> in " \
           "place" in both.stderr
    (tmp_path / "c.jsonl").write_text('["neun zzz", "qqq"]\n\n\n')
    r = run(["translate", "-m", trained_ckpt, "-i", tmp_path / "in.en", "--constraints", tmp_path / "c.jsonl"])
    named = f"--constraints {tmp_path / 'c.jsonl'}:1:"
    assert f"{named} 'zzz' not in the target vocabulary: the output holds <unk> in place" in r.stderr
    assert f"{named} 'qqq' not in the target vocabulary" in r.stderr


def test_an_empty_line_says_that_its_prefix_and_constraints_went_unused(trained_ckpt, tmp_path):
    """(its empty output dropped them without a word, and JSON named no unmet constraint)"""
    (tmp_path / "in.en").write_text("\nseven\n")
    (tmp_path / "c.jsonl").write_text('["tausend"]\n[]\n')
    (tmp_path / "p.de").write_text("sieben\n\n")
    r = run(["translate", "-m", trained_ckpt, "-i", tmp_path / "in.en", "--constraints", tmp_path / "c.jsonl",
             "--prefix-file", tmp_path / "p.de", "--output-format", "json"])
    rows = [json.loads(row) for row in r.stdout.splitlines()]
    assert rows[0]["outputs"][0]["text"] == "" and rows[0]["unmet_constraints"] == ["tausend"]
    assert "unmet_constraints" not in rows[1] and rows[1]["outputs"][0]["text"]
    assert f"{tmp_path / 'in.en'}:1: an empty line, translated as an empty one: its prefix and constraints not " \
           "used" in r.stderr and ":2: an empty line" not in r.stderr


def test_a_line_of_constraints_that_is_not_a_json_list_is_named(trained_ckpt, tmp_path):
    (tmp_path / "c.jsonl").write_text('["neun"]\n{"a": 1}\n[1]\n')
    r = run(["translate", "-m", trained_ckpt, "--constraints", tmp_path / "c.jsonl"], input="one\ntwo\nthree\n",
            ok=False)
    assert r.exit_code == 1 and r.stdout.split("\n")[1:3] == ["", ""]
    named = f"--constraints {tmp_path / 'c.jsonl'}"
    assert f"{named}:2: not a JSON list of strings" in r.stderr and f"{named}:3" in r.stderr
    assert r.stderr.endswith(f"error: <stdin>: 2 line(s) with constraints that are not a JSON list of strings in "
                             f"{named} (line 2, 3); each got an empty output line\n")
    (tmp_path / "p.txt").write_bytes(b"\n\xff\n\n")
    r = run(["translate", "-m", trained_ckpt, "--prefix-file", tmp_path / "p.txt", "--constraints", tmp_path / "c.jsonl"],
            input="one\ntwo\nthree\n", ok=False)  # (line 2's prefix unusable too: its constraints still read, named)
    assert f"{tmp_path / 'p.txt'}:2: invalid UTF-8" in r.stderr and f"{named}:2: not a JSON list of strings" in r.stderr
    assert r.stderr.endswith(f"error: <stdin>: 2 line(s) of invalid UTF-8 in --prefix-file {tmp_path / 'p.txt'} or "
                             f"with constraints that are not a JSON list of strings in {named} (line 2, 3); each got an empty output line\n")
    r = run(["translate", "-m", trained_ckpt, "--constraints", tmp_path / "c.jsonl", "--sampling"], input="one\n",
            ok=False)
    assert r.exit_code == 2 and "--constraints: a constrained beam search, not --sampling" in r.stderr


def test_json_output_marks_a_truncated_line(trained_ckpt):
    r = run(["translate", "-m", trained_ckpt, "--max-input-len", 2, "--output-format", "json"],
            input="forty-two\nseven hundred forty-two\n")
    lines = [json.loads(row) for row in r.stdout.splitlines()]
    assert "truncated" not in lines[0] and lines[1]["truncated"] is True
    assert "<stdin>:2: 3 tokens, truncated to 2 (--max-input-len)" in r.stderr


@pytest.mark.parametrize("search", [["--beam", 3], ["--greedy"], ["--sampling"]])
def test_a_model_whose_scores_are_nan_gives_empty_lines_and_names_them(trained_ckpt, tmp_path, search):
    """No traceback (a beam search of NaN scores finishes no hypothesis) and no NaN in JSON: each line gets an empty
    output, a warning, and the command exits 1 naming them."""
    checkpoint = load_checkpoint(trained_ckpt)
    checkpoint["model"] = {name: torch.full_like(w, math.nan) if w.is_floating_point() else w
                           for name, w in checkpoint["model"].items()}
    save_checkpoint(tmp_path / "nan.pt", checkpoint)
    r = run(["translate", "-m", tmp_path / "nan.pt", *search, "--output-format", "json"], input="forty-two\n\nseven\n",
            ok=False)
    lines = [json.loads(row) for row in r.stdout.splitlines()]  # (strict: NaN is not JSON)
    assert r.exit_code == 1 and len(lines) == 3 and [line["outputs"][0]["text"] for line in lines] == ["", "", ""]
    assert [line.get("not_finite", False) for line in lines] == [True, False, True]
    assert "<stdin>:1: the model's scores are not finite (NaN or infinite); writing an empty line" in r.stderr
    assert r.stderr.endswith("error: <stdin>: 2 line(s) whose scores the model gave as NaN or infinite (line 1, 3); "
                             "each got an empty output line\n")
    (tmp_path / "p.de").write_text("eins\n\n\n")  # (a line that is not empty is not said to be: its prefix unused)
    r = run(["translate", "-m", tmp_path / "nan.pt", "--prefix-file", tmp_path / "p.de"], input="forty-two\n\nseven\n",
            ok=False)
    assert r.exit_code == 1 and "the model's scores are not finite" in r.stderr and "translated as an empty one" not in r.stderr


def test_split_long_translates_a_long_line_in_pieces_and_loses_no_words(trained_ckpt):
    line = "seven hundred forty-two thousand one"
    r = run(["translate", "-m", trained_ckpt, "--max-input-len", 2, "--split-long", "--output-format", "json"],
            input=f"{line}\none\n")
    out = [json.loads(row) for row in r.stdout.splitlines()]
    pieces = run(["translate", "-m", trained_ckpt], input="seven hundred\nforty-two thousand\none\n").stdout.splitlines()
    assert out[0]["outputs"][0]["text"] == " ".join(pieces) and "truncated" not in out[0]
    assert out[0]["outputs"][0]["tokens"] == len(" ".join(pieces).split()) + 3  # one </s> a piece
    assert out[1]["outputs"][0]["text"] == pieces[2] and "truncated" not in r.stderr
    r = run(["translate", "-m", trained_ckpt, "--split-long", "--alignments", "x"], input="one\n", ok=False)
    assert r.exit_code == 2 and "--split-long: a line's pieces are translated apart" in r.stderr


def test_the_output_is_put_in_place_last_after_its_alignments_and_attention(trained_ckpt, text_dir, tmp_path,
                                                                            monkeypatch):
    """(the alignments were renamed after the output: a kill between the two left a new output beside old ones)"""
    placed, replace = [], os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (placed.append(os.path.basename(b)), replace(a, b))[1])
    run(["translate", "-m", trained_ckpt, "-i", text_dir / "test.en", "-o", tmp_path / "out.de", "--alignments",
         tmp_path / "out.al", "--attention-out", tmp_path / "out.h5"])
    assert sorted(placed) == ["out.al", "out.de", "out.h5"] and placed[-1] == "out.de"


def test_a_compressed_input_is_one_line_and_writes_nothing(trained_ckpt, tmp_path):
    import gzip

    (tmp_path / "in.en.gz").write_bytes(gzip.compress(b"one\ntwo\n"))
    r = run(["translate", "-m", trained_ckpt, "-i", tmp_path / "in.en.gz", "-o", tmp_path / "out"], ok=False)
    assert r.exit_code == 1 and r.stderr == (f"error: {tmp_path / 'in.en.gz'}: gzip-compressed; nmtkit reads files "
                                             f"uncompressed: decompress it first (gunzip -k {tmp_path / 'in.en.gz'})\n")
    assert not (tmp_path / "out").exists()


def test_blank_lines_of_tabs_are_empty_inputs_for_a_model_of_one_input_too(trained_ckpt):
    """(a line of a TAB alone, for a one-input model read with --fields, was two fields: an error, exit 1)"""
    r = run(["translate", "-m", trained_ckpt, "--fields"], input="seven\n\n   \n\t\n \t \nseven\n")
    out = r.stdout.split("\n")
    assert len(out) == 7 and out[0] == out[5] != "" and out[1:5] == [""] * 4 and "warning" not in r.stderr


def test_many_lines_cut_or_unusable_are_named_up_to_a_bound_and_counted_at_the_end(trained_ckpt, tmp_path):
    """(100,000 lines cut at --max-input-len were 100,000 warnings, one a line)"""
    (tmp_path / "in").write_bytes(b"one two three four\n" * 14 + b"x\xff\n" * 12)
    r = run(["translate", "-m", trained_ckpt, "--max-input-len", 2, "-i", tmp_path / "in"], ok=False)
    said = r.stderr.splitlines()
    assert len(r.stdout.splitlines()) == 26 and sum("truncated to 2" in line for line in said) == 10
    assert sum("invalid UTF-8" in line and "writing an empty line" in line for line in said) == 10
    for kind in ("lines cut at 2 tokens", "unusable lines"):
        assert f"warning: {tmp_path / 'in'}: {kind}: more than 10; the others are counted, not named (the count " \
               "comes at the end)" in said
    assert "14 line(s) with an input or prefix cut at a length limit (the warnings above name the first 10 of each " \
           "kind)" in said
    assert said[-1] == f"error: {tmp_path / 'in'}: 12 line(s) of invalid UTF-8 (line 15, 16, 17, 18, 19, 20, 21, 22, " \
                       "23, 24 ...); each got an empty output line"

