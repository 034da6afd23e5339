"""nmtkit translate end to end: one line out per line in, n-best, attention file, errors."""
from nmtkit.search.attention_file import AttentionFile
from tests.conftest import TINY_MODEL, run


def test_translate_stdin_to_stdout_keeps_every_line(trained_ckpt):
    r = run(["translate", "-m", trained_ckpt, "--beam", 3], input=b"forty-two\n\nseven hundred\n")
    lines = r.stdout.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[0] and lines[2] and lines[3] == ""


def test_greedy_equals_beam_one_and_files(trained_ckpt, text_dir, tmp_path):
    run(["translate", "-m", trained_ckpt, "--greedy", "-i", text_dir / "test.en", "-o", tmp_path / "g"])
    run(["translate", "-m", trained_ckpt, "--beam", 1, "--batch-size", 7, "-i", text_dir / "test.en", "-o", tmp_path / "b"])
    assert (tmp_path / "g").read_text() == (tmp_path / "b").read_text()
    assert len((tmp_path / "g").read_text().splitlines()) == 30


def test_n_best_format(trained_ckpt):
    r = run(["translate", "-m", trained_ckpt, "--beam", 4, "--n-best", 3], input="forty-two\none\n")
    rows = [l.split(" ||| ") for l in r.stdout.splitlines()]
    assert [row[0] for row in rows] == ["0", "0", "0", "1", "1", "1"]
    assert all(len(row) == 3 and float(row[2]) <= 0 for row in rows)


def test_attention_out(trained_ckpt, tmp_path):
    r = run(["translate", "-m", trained_ckpt, "--attention-out", tmp_path / "a.h5"], input="forty-two\n\none\n")
    with AttentionFile(tmp_path / "a.h5") as f:
        assert len(f) == 3
        assert f[0]["attention"]["source"].shape == (len(f[0]["tgt_tokens"]), 2)
        assert " ".join(f[2]["tgt_tokens"][:-1]) == r.stdout.splitlines()[2]


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
    r = run(["translate", "-m", tmp_path / "none.pt"], input="x\n", ok=False)
    assert "none.pt: no such checkpoint" in r.stderr
    (tmp_path / "bad.pt").write_text("junk")
    r = run(["translate", "-m", tmp_path / "bad.pt"], input="x\n", ok=False)
    assert "bad.pt: not a readable nmtkit checkpoint" in r.stderr
    r = run(["translate", "-m", trained_ckpt, "--beam", 2, "--n-best", 3], input="x\n", ok=False)
    assert r.exit_code == 2
    r = run(["translate", "-m", trained_ckpt, "-i", tmp_path / "nope.txt"], ok=False)
    assert "nope.txt: no such file" in r.stderr


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
