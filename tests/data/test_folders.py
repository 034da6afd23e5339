"""Folders written whole: what a killed run left beside one is removed by the next, what a live run writes is not."""
import subprocess
import sys

from nmtkit.data.folders import atomic_folder


def test_the_temporary_folders_a_killed_run_left_are_removed_and_a_live_run_s_kept(tmp_path, capsys):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # (its pid is no process's now)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        left = [tmp_path / f".out.{dead.pid}.abcdefgh.tmp", tmp_path / f".out.{dead.pid}.ijklmnop.old"]
        kept = [tmp_path / f".out.{live.pid}.qrstuvwx.tmp", tmp_path / ".out.notes.tmp",
                tmp_path / f".other.{dead.pid}.abcdefgh.tmp", tmp_path / f".out.{dead.pid}.tmp"]  # (not mkdtemp's)
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
