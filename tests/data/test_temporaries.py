"""Temporary files are named after their writer: the next write of the same output removes those a killed process
left (a translate killed by SIGKILL left its hidden temporary for good), and keeps a live process', another
machine's and any file of another name."""
import subprocess
import sys

from nmtkit.data.temporaries import host, writer
from nmtkit.data.text import atomic_output


def test_a_write_removes_the_temporary_files_a_killed_writer_left_and_keeps_the_others(tmp_path, capsys):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # (its pid is no process's now)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        here = host()
        left = [tmp_path / f".out.de.{dead.pid}-{here}.abcdefgh.tmp", tmp_path / f".out.de.{dead.pid}-{here}.a_c12fgh.tmp"]
        kept = [tmp_path / f".out.de.{live.pid}-{here}.qrstuvwx.tmp", tmp_path / ".out.de.notes.tmp",
                tmp_path / f".out.{dead.pid}-{here}.abcdefgh.tmp", tmp_path / ".out.de.abcdefgh.tmp",
                tmp_path / f".out.de.{dead.pid}-elsewhere.abcdefgh.tmp"]  # (another machine's: its pids are not ours)
        for path in left + kept:
            path.write_text("half")
        with atomic_output(tmp_path / "out.de") as f:
            f.write("done\n")
        assert not any(p.exists() for p in left) and all(p.exists() for p in kept)
        assert f"removed 2 temporary file(s) that a killed run left beside {tmp_path / 'out.de'}" in capsys.readouterr().err
        assert (tmp_path / "out.de").read_text() == "done\n"
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out.de.")) == \
            sorted(p.name for p in kept if p.name.startswith(".out.de."))  # (this write's own renamed away)
    finally:
        live.kill()
        live.wait()


def test_a_temporary_is_named_by_its_writer(tmp_path):
    with atomic_output(tmp_path / "out.de") as f:
        names = [p.name for p in tmp_path.iterdir()]
        f.write("x")
    assert len(names) == 1 and names[0].startswith(f".out.de.{writer()}.") and names[0].endswith(".tmp")
