"""nmtkit score: sacrebleu metrics with signature, several references, perplexity, errors."""
import math

import pytest
import sacrebleu
import torch

from nmtkit.checkpoint import load_checkpoint, save_checkpoint
from nmtkit.data.batching import make_batch
from nmtkit.inference import load_model
from tests.conftest import pipe, run, unpack

HYP = ["the cat sat on the mat", "a dog barked"]
REF1 = ["the cat sat on a mat", "the dog barked"]
REF2 = ["a cat sat on the mat", "a dog barked loudly"]


@pytest.fixture
def files(tmp_path):
    for name, lines in (("hyp", HYP), ("ref1", REF1), ("ref2", REF2)):
        (tmp_path / name).write_text("".join(l + "\n" for l in lines))
    return tmp_path


@pytest.mark.parametrize("metric", ["bleu", "chrf", "chrf++", "ter"])
def test_metrics_equal_sacrebleu(files, metric):
    r = run(["score", "--metric", metric, "-r", files / "ref1", "-r", files / "ref2", "-i", files / "hyp", "--score-only"])
    expected = {"bleu": sacrebleu.corpus_bleu, "chrf": sacrebleu.corpus_chrf, "ter": sacrebleu.corpus_ter,
                "chrf++": lambda h, r: sacrebleu.corpus_chrf(h, r, word_order=2)}[metric](HYP, [REF1, REF2]).score
    assert float(r.stdout) == pytest.approx(expected, abs=0.01)


def test_confidence_is_sacrebleus_bootstrap_interval(files):
    r = run(["score", "-r", files / "ref1", "-i", files / "hyp", "--confidence", "--bootstrap", 100, "--score-only"])
    expected = sacrebleu.metrics.BLEU().corpus_score(HYP, [REF1], n_bootstrap=100)
    assert [float(x) for x in r.stdout.split()] == pytest.approx([expected.score, expected._mean, expected._ci],
                                                                  abs=0.005)
    r = run(["score", "--metric", "chrf++", "-r", files / "ref1", "-i", files / "hyp", "--confidence"])
    assert "μ = " in r.stdout and "bs:1000" in r.stdout and "nw:2" in r.stdout
    r = run(["score", "--metric", "cider", "-r", files / "ref1", "-i", files / "hyp", "--confidence"], ok=False)
    assert r.exit_code == 2 and "--confidence: sacrebleu's bootstrap is for bleu" in r.stderr


def test_signature_stdin_and_options(files):
    r = run(["score", "-r", files / "ref1", "--lowercase", "--tokenize", "intl"], input="\n".join(HYP) + "\n")
    assert r.stdout.startswith("BLEU = ") and "case:lc" in r.stdout and "tok:intl" in r.stdout


def test_references_and_hypotheses_may_be_pipes(files):
    """``-r <(command) -i <(command)``: each read once."""
    expected = run(["score", "-r", files / "ref1", "-i", files / "hyp", "--score-only"]).stdout
    assert run(["score", "-r", pipe(files / "r", "\n".join(REF1) + "\n"), "-i", pipe(files / "h", "\n".join(HYP) + "\n"),
                "--score-only"]).stdout == expected


@pytest.mark.parametrize("extra, message", [
    (["-m", "model.pt"], "--model: goes with --metric ppl"),
    (["--src", "src.txt"], "--src: goes with --metric ppl"),
    (["--batch-size", 8], "--batch-size: goes with --metric ppl"),
    (["--bootstrap", 100], "--bootstrap: goes with --confidence"),
    (["--metric", "chrf", "--no-brevity-penalty"], "--no-brevity-penalty: goes with --metric bleu"),
    (["--metric", "ter", "--max-ngram", 2], "--max-ngram: goes with --metric bleu"),
    (["--metric", "chrf", "--tokenize", "zh"], "--tokenize: goes with --metric bleu"),
    (["--metric", "cider", "--tokenize", "char"], "--tokenize: goes with --metric bleu"),
])
def test_an_option_the_metric_would_ignore_is_refused(files, extra, message):
    for name in ("model.pt", "src.txt"):
        (files / name).write_text("x\n")
    extra = [files / x if x in ("model.pt", "src.txt") else x for x in extra]
    r = run(["score", "-r", files / "ref1", "-i", files / "hyp", *extra], ok=False)
    assert r.exit_code == 2 and r.stderr == f"error: {message}\n"


def test_perplexity_reads_no_hypotheses(trained_ckpt, text_dir):
    r = run(["score", "--metric", "ppl", "-m", trained_ckpt, "--src", text_dir / "test.en", "-r", text_dir / "test.de",
             "-i", text_dir / "test.de"], ok=False)
    assert r.exit_code == 2 and r.stderr.startswith("error: --input: goes with a metric of hypotheses (--metric ppl")
    r = run(["score", "--metric", "ppl", "-m", trained_ckpt, "--src", text_dir / "test.en", "-r", text_dir / "test.de",
             "--lowercase"], ok=False)
    assert r.exit_code == 2 and r.stderr.startswith("error: --lowercase: goes with a metric of hypotheses")
    r = run(["score", "--metric", "ppl", "-m", trained_ckpt, "--src", text_dir / "test.en", "-r", text_dir / "test.de",
             "-r", text_dir / "test.de"], ok=False)  # (a second reference would be ignored)
    assert r.exit_code == 2 and r.stderr == "error: --metric ppl needs -m CKPT, --src FILE and one -r FILE\n"


def test_mismatched_lines_and_missing_reference(files):
    r = run(["score", "-r", files / "ref1"], input="only one line\n", ok=False)
    assert "<stdin> has 1 lines but reference" in r.stderr
    r = run(["score", "-r", files / "ref1"], input=b"ok\n\xff\n", ok=False)
    assert r.exit_code == 1 and r.stderr.startswith("error: <stdin>:2: invalid UTF-8")
    r = run(["score", "-r", files / "ref1", "--no-brevity-penalty", "--confidence"], input="a\nb\n", ok=False)
    assert r.exit_code == 2 and r.stderr.startswith("error: --confidence: sacrebleu's bootstrap is for ")
    r = run(["score"], input="x\n", ok=False)
    assert r.exit_code == 2 and "-r/--ref" in r.stderr
    r = run(["score", "-r", files / "missing"], input="x\n", ok=False)
    assert "missing: no such file" in r.stderr


def test_perplexity_is_eq_13(trained_ckpt, text_dir):
    r = run(["score", "--metric", "ppl", "-m", trained_ckpt, "--src", text_dir / "test.en", "-r", text_dir / "test.de",
             "--score-only"])
    model, sv, tv = unpack(load_model(trained_ckpt))
    nll, n = 0.0, 0
    for s, t in zip((text_dir / "test.en").read_text().splitlines(), (text_dir / "test.de").read_text().splitlines()):
        b = make_batch([sv.encode(s)], [tv.encode(t)])
        with torch.no_grad():
            state = model.encode(b)
        for i in range(b.tgt_in.size(1)):  # log P(y|x) summed step by step
            with torch.no_grad():
                lp, state, _ = model.decode_step(b.tgt_in[:, i], state)
            nll -= float(lp[0, b.tgt_out[0, i]])
            n += 1
    assert float(r.stdout) == pytest.approx(math.exp(nll / n), rel=1e-4)
    r = run(["score", "--metric", "ppl", "-r", text_dir / "test.de"], ok=False)
    assert "--metric ppl needs -m CKPT" in r.stderr


def test_perplexity_of_a_model_whose_scores_are_nan_is_an_error(trained_ckpt, text_dir, tmp_path):
    checkpoint = load_checkpoint(trained_ckpt)
    checkpoint["model"] = {name: torch.full_like(w, math.nan) if w.is_floating_point() else w
                           for name, w in checkpoint["model"].items()}
    save_checkpoint(tmp_path / "nan.pt", checkpoint)
    r = run(["score", "--metric", "ppl", "-m", tmp_path / "nan.pt", "--src", text_dir / "test.en", "-r",
             text_dir / "test.de"], ok=False)
    assert r.exit_code == 1 and not r.stdout
    assert f"error: -m {tmp_path / 'nan.pt'}: its log-probabilities of {text_dir / 'test.de'} are not numbers" in r.stderr


@pytest.mark.parametrize("n", [1, 3])
def test_hypotheses_shorter_or_longer_than_a_reference_are_a_one_line_error(files, n):
    """Fewer or more hypothesis lines than any reference: exit 1, an error naming both files."""
    (files / "h").write_text("x\n" * n)
    r = run(["score", "-r", files / "ref1", "-i", files / "h"], ok=False)
    assert r.exit_code == 1 and r.stderr == f"error: {files / 'h'} has {n} lines but reference {files / 'ref1'} has 2\n"
    r = run(["score", "-r", files / "ref1"], input="x\n" * n, ok=False)
    assert r.exit_code == 1 and r.stderr == f"error: <stdin> has {n} lines but reference {files / 'ref1'} has 2\n"


@pytest.mark.parametrize("n", [1, 3])
def test_a_second_reference_of_another_length_is_an_error(files, n):
    (files / "ref3").write_text("x\n" * n)
    r = run(["score", "-r", files / "ref1", "-r", files / "ref3", "-i", files / "hyp"], ok=False)
    assert r.exit_code == 1 and r.stderr == f"error: {files / 'hyp'} has 2 lines but reference {files / 'ref3'} has {n}\n"


@pytest.mark.parametrize("n", [1, 3])
def test_perplexity_source_and_reference_of_different_lengths_are_an_error(files, n):
    """Checked before the model is loaded: a source with fewer or more lines than the reference."""
    (files / "src").write_text("x\n" * n)
    r = run(["score", "--metric", "ppl", "-m", files / "no.pt", "--src", files / "src", "-r", files / "ref1"], ok=False)
    assert r.exit_code == 1
    assert r.stderr.startswith(f"error: {files / 'src'} has {n} lines but {files / 'ref1'} has 2:")
    assert r.stderr.count("\n") == 1


def test_perplexity_with_an_empty_source_line(trained_ckpt, tmp_path):
    (tmp_path / "src").write_text("forty-two\n\nseven\n")
    (tmp_path / "ref").write_text("zwei und vierzig\nnull\nsieben\n")
    r = run(["score", "--metric", "ppl", "-m", trained_ckpt, "--src", tmp_path / "src", "-r", tmp_path / "ref",
             "--score-only"])
    assert float(r.stdout) > 1


def test_perplexity_with_tab_separated_references_counts_every_one(trained_ckpt, tmp_path):
    """A line of several references is that many pairs with the line's source."""
    (tmp_path / "src").write_text("forty-two\nseven\n")
    (tmp_path / "refs").write_text("zwei und vierzig\tzwei vierzig\nsieben\n")
    (tmp_path / "src2").write_text("forty-two\nforty-two\nseven\n")
    (tmp_path / "ref2").write_text("zwei und vierzig\nzwei vierzig\nsieben\n")
    ppl = lambda src, ref, *tab: float(run(["score", "--metric", "ppl", "-m", trained_ckpt, "--src", tmp_path / src,
                                            "-r", tmp_path / ref, *tab, "--score-only"]).stdout)
    assert ppl("src", "refs", "--tab-refs") == pytest.approx(ppl("src2", "ref2"), rel=1e-5)


def test_perplexity_of_an_unreadable_source_line_is_one_error(trained_ckpt, tmp_path):
    """One line naming the file and line, no warning before it (an image path's: tests/cli/test_translate.py)."""
    (tmp_path / "src").write_bytes(b"forty-two\n\xff seven\n")
    (tmp_path / "ref").write_text("zwei und vierzig\nsieben\n")
    r = run(["score", "--metric", "ppl", "-m", trained_ckpt, "--src", tmp_path / "src", "-r", tmp_path / "ref"],
            ok=False)
    assert r.exit_code == 1 and r.stderr == f"error: {tmp_path / 'src'}:2: invalid UTF-8 (byte 1 of the line)\n"


def test_a_pair_too_long_to_score_in_memory_is_one_line_naming_it(trained_ckpt, tmp_path, monkeypatch):
    """(a 20,000-word line asked for 33 GB, and the allocation's failure was a traceback)"""
    import nmtkit.metrics.perplexity as perplexity

    (tmp_path / "src").write_text("one\n" + "seven " * 40 + "\ntwo\n")
    (tmp_path / "ref").write_text("eins\nsieben\nzwei\n")
    scored = []

    def short_of_memory(model, batches, device):
        for batch in batches:  # (length-sorted, one pair a batch: the long line last)
            scored.append(batch)
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 96009600240 bytes")

    monkeypatch.setattr(perplexity, "corpus_nll", short_of_memory)
    r = run(["score", "--metric", "ppl", "-m", trained_ckpt, "--src", tmp_path / "src", "-r", tmp_path / "ref",
             "--batch-size", 1], ok=False)
    assert len(scored) == 3 and r.exit_code == 1 and r.stderr == (
        f"error: {tmp_path / 'ref'}:2: out of memory scoring the batch of 1 pair(s) that holds this line, the longest "
        "(40 input and 1 reference tokens): perplexity is of whole pairs, so score without it, or with a smaller "
        "--batch-size\n")

