"""Folders written whole: what a killed run left beside one is removed by the next; what a live run, or another
machine, writes is not, nor the copy of a folder being replaced; a folder that came to hold a user's file while
the command ran is left as it is; folders are told apart by whole names, not by how their names start."""
import subprocess
import sys

import pytest

from nmtkit.data.folders import atomic_folder, check_output_folder
from nmtkit.data.temporaries import writer
from nmtkit.errors import NmtkitError


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


def test_a_file_the_user_put_in_the_folder_while_it_was_rewritten_keeps_the_folder(tmp_path):
    """The folder is checked again before it is replaced: a file added during a long run is not deleted with it."""
    out = tmp_path / "out"
    with atomic_folder(out, "corpus folder") as tmp:
        (tmp / "shard.h5").write_text("old")
    with pytest.raises(NmtkitError, match=f"-o {out}: holds notes.txt, which nmtkit did not make there"):
        with atomic_folder(out, "corpus folder", replace=True) as tmp:
            (tmp / "shard.h5").write_text("new")
            (out / "notes.txt").write_text("the user's")  # (while the command writes)
    assert (out / "notes.txt").read_text() == "the user's" and (out / "shard.h5").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the new one's temporary folder removed


def test_a_folder_whose_name_starts_like_another_s_is_not_inside_it(tmp_path, monkeypatch):
    """Neither the current folder nor an input is "inside" the output because their paths start alike."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "train.en").write_text("a\n")
    (tmp_path / "out-2").mkdir()
    monkeypatch.chdir(tmp_path / "out-2")
    check_output_folder(tmp_path / "corp", "corpus folder", False, "-o", "--overwrite",
                        inputs=[tmp_path / "corpus" / "train.en"])
    check_output_folder(tmp_path / "out", "corpus folder", False, "-o", "--overwrite")
    with pytest.raises(NmtkitError, match="holds the input"):  # (what is inside is still refused)
        check_output_folder(tmp_path / "corpus", "corpus folder", False, "-o", "--overwrite",
                            inputs=[tmp_path / "corpus" / "train.en"])
    with pytest.raises(NmtkitError, match="the current folder or one above it"):
        check_output_folder(tmp_path, "corpus folder", False, "-o", "--overwrite")
