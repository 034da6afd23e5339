import re
import shutil

from tests.conftest import run


def test_check_corpus_says_ok_or_names_the_damage(corpus_dir, tmp_path):
    r = run(["check-corpus", corpus_dir])
    assert re.fullmatch(f"{corpus_dir}: ok: 9 files \\([0-9,]+ bytes\\), sizes and SHA-256 match the manifest; "
                        "2,000 train, 40 valid, 30 test examples\n", r.stdout)
    copy = shutil.copytree(corpus_dir, tmp_path / "c")
    (copy / "test.en").write_text("changed\n")
    r = run(["check-corpus", copy], ok=False)
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr == f"error: {copy / 'test.en'}: 8 bytes, but the manifest recorded 832 (changed or cut short since " \
                       "preprocessing)\n"
    r = run(["check-corpus", tmp_path], ok=False)
    assert r.exit_code == 1 and "not a corpus folder (no manifest.json)" in r.stderr
