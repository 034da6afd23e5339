"""Folders written whole: what a killed run left beside one is removed by the next; what a live run, or another
machine, writes is not, nor the copy of a folder being replaced."""
import subprocess
import sys

from nmtkit.data.folders import atomic_folder, writer


def test_the_temporary_folders_a_killed_run_left_are_removed_and_a_live_run_s_kept(tmp_path, capsys):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # (its pid is no process's now)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host = writer().split("-", 1)[1]  # (this machine's)
        left = [tmp_path / f".out.{dead.pid}-{host}.abcdefgh.tmp", tmp_path / f".out.{dead.pid}-{host}.ijklmnop.tmp"]
        kept = [tmp_path / f".out.{live.pid}-{host}.qrstuvwx.tmp", tmp_path / ".out.notes.tmp",
                tmp_path / f".other.{dead.pid}-{host}.abcdefgh.tmp", tmp_path / f".out.{dead.pid}-{host}.tmp",
                tmp_path / f".out.{dead.pid}-elsewhere.abcdefgh.tmp",  # (another machine's: its pids are not ours)
                tmp_path / f".out.{dead.pid}-{host}.ijklmnop.old"]  # (the only copy, if killed between renames)
        for folder in left + kept[:1] + kept[2:]:
            folder.mkdir()
            (folder / "shard.h5").write_bytes(b"half")
        kept[1].write_text("the user's")  # (a file, and not named by a pid)
        with atomic_folder(tmp_path / "out", "corpus folder") as tmp:
            (tmp / "done").write_text("")
        assert not any(p.exists() for p in left) and all(p.exists() for p in kept)
        assert f"removed 2 temporary folder(s) that a killed run left beside {tmp_path / 'out'}" in capsys.readouterr().err
        assert (tmp_path / "out" / "done").exists()
    finally:
        live.kill()
        live.wait()
