"""The run folder's lock: what it writes, and the folder it leaves (tests/robustness/test_files.py drives it
through `nmtkit train`: refusals, take-overs, file systems without locks)."""
import os

from nmtkit.train.run_lock import LOCK, RunLock


def test_a_stale_lock_of_a_longer_pid_is_replaced_by_this_process_pid_alone(tmp_path):
    """The file is emptied before the pid is written: no digits of the dead holder's pid left after it, which the
    next run would read as another pid, or as a file that is not a lock."""
    (tmp_path / LOCK).write_text("4194304123\n")  # (a pid longer than any this process can have)
    with RunLock(tmp_path) as lock:
        assert (tmp_path / LOCK).read_text() == f"{os.getpid()}\n" and lock.fd is not None
    assert not (tmp_path / LOCK).exists()


def test_a_folder_that_was_there_stays_and_one_made_for_the_lock_goes_when_left_empty(tmp_path):
    (tmp_path / "mine").mkdir()
    with RunLock(tmp_path / "mine"):
        pass
    assert (tmp_path / "mine").is_dir()  # the user's (empty) folder is kept
    with RunLock(tmp_path / "new" / "run"):
        assert (tmp_path / "new" / "run" / LOCK).is_file()
    assert not (tmp_path / "new" / "run").exists()  # made here and left empty
    with RunLock(tmp_path / "kept"):
        (tmp_path / "kept" / "last.pt").write_text("x")
    assert (tmp_path / "kept" / "last.pt").is_file()  # made here, but not empty
