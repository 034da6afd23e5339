"""Hostile text for translate and the other readers: invalid UTF-8, over-long lines, byte-order marks, empty lines
in n-best lists, SIGTERM. Every line in gets its line out, nothing half-written is left under an output's name."""
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import run


def test_invalid_utf8_and_overlong_lines(trained_ckpt, tmp_path):
    r = run(["translate", "-m", trained_ckpt, "--max-input-len", 2, "-o", tmp_path / "o"],
            input=b"one\n\xff\xfe\none two three four\n", ok=False)
    assert r.exit_code == 1
    assert "<stdin>:2: invalid UTF-8" in r.stderr and "<stdin>:3: 4 tokens, truncated to 2" in r.stderr
    out = (tmp_path / "o").read_text().split("\n")
    assert len(out) == 4 and out[1] == "" and out[2]


def test_n_best_writes_n_entries_for_every_line_empty_ones_included(trained_ckpt):
    r = run(["translate", "-m", trained_ckpt, "--beam", 4, "--n-best", 3], input="forty-two\n\none\n")
    rows = [l.split(" ||| ") for l in r.stdout.splitlines()]
    assert [row[0] for row in rows] == ["0"] * 3 + ["1"] * 3 + ["2"] * 3
    assert [row[1] for row in rows[3:6]] == [""] * 3 and all(len(row) == 4 for row in rows)


def test_a_byte_order_mark_does_not_change_the_first_translation(trained_ckpt, tmp_path):
    plain = run(["translate", "-m", trained_ckpt], input=b"forty-two\nseven\n").stdout
    assert run(["translate", "-m", trained_ckpt], input=b"\xef\xbb\xbfforty-two\nseven\n").stdout == plain
    (tmp_path / "in").write_bytes(b"\xef\xbb\xbfforty-two\nseven\n")
    assert run(["translate", "-m", trained_ckpt, "-i", tmp_path / "in"]).stdout == plain


CLI = "import sys; from nmtkit.cli import main; sys.exit(main())"


def default_sigint() -> None:
    """(a shell starts background jobs with SIGINT ignored, and Python then raises no KeyboardInterrupt)"""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig,code,said", [(signal.SIGTERM, 143, b"terminated\n"),
                                           (signal.SIGINT, 130, b"interrupted\n")])
def test_a_signal_removes_the_temporary_output_file(trained_ckpt, tmp_path, sig, code, said):
    """translate -o writes to a temporary file beside the output: SIGTERM (Ctrl-C) removes it and exits 143 (130),
    as a shell reports a process the signal ended."""
    (tmp_path / "in").write_text("seven hundred forty-two\n" * 20000)
    proc = subprocess.Popen([sys.executable, "-c", CLI, "translate", "-m", str(trained_ckpt), "-i", str(tmp_path / "in"),
                             "-o", str(tmp_path / "out")], stderr=subprocess.PIPE, preexec_fn=default_sigint)
    deadline = time.time() + 60
    while not list(tmp_path.glob(".out.*.tmp")) and time.time() < deadline:
        time.sleep(0.1)
    assert list(tmp_path.glob(".out.*.tmp")), "the temporary output file never appeared"
    proc.send_signal(sig)
    assert proc.wait(60) == code and proc.stderr.read().endswith(said)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_a_reader_that_stops_reading_ends_translate_quietly(trained_ckpt, tmp_path):
    """`nmtkit translate ... | head -1`: once the pipe's reader is gone, exit code 141 (a shell's for SIGPIPE), no
    traceback."""
    (tmp_path / "in").write_text("seven hundred forty-two\n" * 5000)
    proc = subprocess.Popen([sys.executable, "-c", CLI, "translate", "-m", str(trained_ckpt), "-i", str(tmp_path / "in"),
                             "--batch-size", "8"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(120) == 141
    assert b"Traceback" not in proc.stderr.read()



def test_byte_order_marks_are_dropped_by_preprocess_and_score(text_dir, tmp_path):
    bom = b"\xef\xbb\xbf"
    for split in ("train", "valid"):
        for lang in ("en", "de"):  # (each file two joined by `cat`, each half opening with a mark)
            lines = (text_dir / f"{split}.{lang}").read_bytes().splitlines(keepends=True)
            (tmp_path / f"{split}.{lang}").write_bytes(bom + b"".join(lines[:10]) + bom + b"".join(lines[10:]))
    run(["preprocess", "--train", tmp_path / "train", "--valid", tmp_path / "valid", "--src", "en", "--tgt", "de",
         "--vocab", "word:1000", "-o", tmp_path / "c"])
    assert "\ufeff" not in (tmp_path / "c" / "vocab.src.txt").read_text(encoding="utf-8")
    score = ["score", "--score-only", "-r", text_dir / "valid.de"]
    assert run(score, input=(tmp_path / "valid.de").read_bytes()).stdout == "100.00\n"
