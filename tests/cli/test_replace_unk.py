"""nmtkit align and replace-unk end to end."""
import numpy as np

from nmtkit.search.attention_file import AttentionWriter
from tests.conftest import pipe, run
from tests.tools.test_aligner import planted_corpus


def test_align_learns_a_table_and_replace_unk_uses_it(tmp_path):
    pairs = planted_corpus(n=300, words=20)
    (tmp_path / "train.src").write_text("".join(" ".join(s) + "\n" for s, _ in pairs))
    (tmp_path / "train.tgt").write_text("".join(" ".join(t) + "\n" for _, t in pairs))
    r = run(["align", "--src", tmp_path / "train.src", "--tgt", tmp_path / "train.tgt", "-o", tmp_path / "lex.tsv"])
    assert "300 sentence pairs, 20 source and 21 target words" in r.stderr
    best = {}
    for line in (tmp_path / "lex.tsv").read_text().splitlines():
        s, t, p = line.split("\t")
        best.setdefault(s, t)
    assert best["s7"] == "t7" and len(best) == 20

    w = AttentionWriter(tmp_path / "a.h5")
    w.add(0, ["s7", "<unk>", "</s>"], ["<unk>", "<unk>", "</s>"],
          {"source": np.array([[.9, .1, 0], [.2, .7, .1], [0, 0, 1]])})
    w.close()
    (tmp_path / "src").write_text("s7 Zebra\n")
    r = run(["replace-unk", "--src", tmp_path / "src", "--attention", tmp_path / "a.h5", "--dict", tmp_path / "lex.tsv"],
            input="<unk> <unk>\n")
    assert r.stdout == "t7 Zebra\n"
    assert "replaced 2 <unk> in 1 lines: 1 from the dictionary, 1 copied" in r.stderr
    (tmp_path / "src").write_text("s7 s8\n")  # (both in the table now: two from the dictionary, none copied)
    r = run(["replace-unk", "--src", tmp_path / "src", "--attention", tmp_path / "a.h5", "--dict", tmp_path / "lex.tsv"],
            input="<unk> <unk>\n")
    assert r.stdout == "t7 t8\n" and "replaced 2 <unk> in 1 lines: 2 from the dictionary, 0 copied" in r.stderr
    (tmp_path / "src").write_text("s7 Zebra\n")
    r = run(["align", "--src", tmp_path / "train.src", "--tgt", tmp_path / "train.tgt", "--null-prob", 0.5,
             "--iterations", 2, "-o", tmp_path / "lex2.tsv"])
    run(["align", "--src", tmp_path / "train.src", "--tgt", tmp_path / "train.tgt", "--null-prob", 0.01,
         "--iterations", 2, "-o", tmp_path / "lex3.tsv"])
    assert (tmp_path / "lex2.tsv").read_text() != (tmp_path / "lex3.tsv").read_text()  # (--null-prob is used)
    r = run(["replace-unk", "--src", pipe(tmp_path / "psrc", "s7 Zebra\n"), "--attention", tmp_path / "a.h5", "--dict",
             tmp_path / "lex.tsv", "-i", pipe(tmp_path / "phyp", "<unk> <unk>\n")])  # (pipes: read once)
    assert r.stdout == "t7 Zebra\n"


def test_translate_output_passes_the_consistency_checks(trained_ckpt, tmp_path):
    (tmp_path / "src").write_text("forty-two\n\nseven hundred\n")
    run(["translate", "-m", trained_ckpt, "-i", tmp_path / "src", "-o", tmp_path / "hyp",
         "--attention-out", tmp_path / "a.h5"])
    run(["replace-unk", "--src", tmp_path / "src", "--attention", tmp_path / "a.h5", "-i", tmp_path / "hyp",
             "-o", tmp_path / "out"])
    assert (tmp_path / "out").read_text() == (tmp_path / "hyp").read_text().replace("<unk>", "forty-two")


def test_errors(tmp_path):
    (tmp_path / "s").write_text("a\n")
    (tmp_path / "t").write_text("x\ny\n")
    r = run(["align", "--src", tmp_path / "s", "--tgt", tmp_path / "t"], ok=False)
    assert "s has 1 lines but" in r.stderr and r.exit_code == 1
    (tmp_path / "t").write_text("x\n")
    (tmp_path / "l").write_text("0-0\n0-1\n")
    r = run(["align", "--src", tmp_path / "s", "--tgt", tmp_path / "t", "--links", tmp_path / "l"], ok=False)
    assert f"{tmp_path / 's'} has 1 lines but {tmp_path / 'l'} has 2" in r.stderr
    r = run(["align", "--src", tmp_path / "s", "--tgt", tmp_path / "t", "--null-prob", 1], ok=False)
    assert "--null-prob: expects a number in [0, 1), got '1'" in r.stderr and r.exit_code == 2
    r = run(["align", "--src", tmp_path / "s", "--tgt", tmp_path / "t", "--links", tmp_path / "l", "--iterations", 3],
            ok=False)
    assert r.exit_code == 2 and r.stderr == "error: --iterations: goes with EM training (no --links)\n"
    for option, value in (("--null-prob", 0.1), ("--diagonal-tension", 2)):
        r = run(["align", "--src", tmp_path / "s", "--tgt", tmp_path / "t", "--links", tmp_path / "l", option, value],
                ok=False)
        assert r.exit_code == 2 and r.stderr == f"error: {option}: goes with EM training (no --links)\n"
    r = run(["replace-unk", "--src", tmp_path / "s", "--attention", tmp_path / "t"], input="x\n", ok=False)
    assert "not an nmtkit attention file" in r.stderr
    r = run(["replace-unk", "--src", tmp_path / "s", "--attention", tmp_path / "missing.h5"], ok=False)
    assert "missing.h5: no such file" in r.stderr
    w = AttentionWriter(tmp_path / "a.h5")
    w.add(0, ["a", "</s>"], ["x", "</s>"], {"source": np.ones((2, 2)) / 2})
    w.close()
    r = run(["replace-unk", "--src", tmp_path / "s", "--attention", tmp_path / "a.h5", "-o", tmp_path / "o"],
            input="x\ny\n", ok=False)
    assert "<stdin> has more lines than the 1 sentences" in r.stderr and not (tmp_path / "o").exists()
    (tmp_path / "hyp").write_text("x\ny\n")
    r = run(["replace-unk", "--src", tmp_path / "s", "--attention", tmp_path / "a.h5", "-i", tmp_path / "hyp"], ok=False)
    assert f"{tmp_path / 'hyp'} has more lines than the 1 sentences" in r.stderr


def test_links_give_a_table(tmp_path):
    """Each source word's translations by falling probability (a's z, linked three times, before its x)."""
    (tmp_path / "s").write_text("a b\na\na\na\n")
    (tmp_path / "t").write_text("x y\nz\nz\nz\n")
    (tmp_path / "l").write_text("0-0 1-1\n0-0\n0-0\n0-0\n")
    r = run(["align", "--src", tmp_path / "s", "--tgt", tmp_path / "t", "--links", tmp_path / "l"])
    assert r.stdout == "a\tz\t0.75\na\tx\t0.25\nb\ty\t1\n"
    r = run(["align", "--src", tmp_path / "s", "--tgt", tmp_path / "t", "--links", tmp_path / "l", "--min-prob", 0.25])
    assert r.stdout == "a\tz\t0.75\na\tx\t0.25\nb\ty\t1\n"  # (an entry at --min-prob is kept)


def test_align_reads_pipes(tmp_path):
    """Each file is read once (their lines were counted first: a pipe was refused as "not a regular file")."""
    r = run(["align", "--src", pipe(tmp_path / "s", "a b\nc\n"), "--tgt", pipe(tmp_path / "t", "x y\nz\n"), "--links",
             pipe(tmp_path / "l", "0-0 1-1\n0-0\n")])
    assert r.stdout == "a\tx\t1\nb\ty\t1\nc\tz\t1\n"
    r = run(["align", "--src", pipe(tmp_path / "s2", "a b\nc\n"), "--tgt", pipe(tmp_path / "t2", "x y\nz\n"), "--min-prob",
             0.5])
    assert [line.split("\t")[:2] for line in r.stdout.splitlines()] == [["a", "x"], ["b", "y"], ["c", "z"]]
    r = run(["align", "--src", pipe(tmp_path / "s3", "a\n"), "--tgt", pipe(tmp_path / "t3", "x\ny\n")], ok=False)
    assert r.exit_code == 1 and r.stderr == (f"error: {tmp_path / 's3'} has 1 lines but {tmp_path / 't3'} has more: "
                                             "parallel files must have the same number of lines\n")
