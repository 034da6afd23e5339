"""bench/ape_edits.py: a changed line is counted closer, further or as far from its post-edit as the MT was."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "bench" / "ape_edits.py"


def test_each_changed_line_is_judged_against_its_post_edit(tmp_path):
    files = {"mt": ["a b c d", "e f g h", "i j k l", "m n"],
             "pe": ["a b c d", "e f g x", "i j k l", "m n o"],
             "out": ["a b c d",    # unchanged: not counted
                     "e f g x",    # fixed: closer
                     "i j k z",    # broken: further
                     "m n p"]}     # one wrong word for one missing: as far
    for name, text in files.items():
        (tmp_path / name).write_text("\n".join(text) + "\n", encoding="utf-8")
    r = subprocess.run([sys.executable, SCRIPT, "--mt", tmp_path / "mt", "--pe", tmp_path / "pe", tmp_path / "out"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith("3 of 4 lines changed: 1 closer to the post-edit, 1 further, 1 as far")


def test_outputs_of_another_length_are_refused(tmp_path):
    for name in ("mt", "pe"):
        (tmp_path / name).write_text("a\nb\n", encoding="utf-8")
    (tmp_path / "out").write_text("a\n", encoding="utf-8")
    r = subprocess.run([sys.executable, SCRIPT, "--mt", tmp_path / "mt", "--pe", tmp_path / "pe", tmp_path / "out"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "2 MT lines, 2 post-edits and 1 output lines" in r.stderr
