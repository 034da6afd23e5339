"""What ships: the wheel carries the licence and the server's page; the source release (sdist) is a tree where the
README's two commands run (tests, recipes, docs, the Makefile, the licence), without the benchmarks' recorded
outputs. Built in a copy of the source tree, by the setuptools installed (as pip builds it)."""
import shutil
import tarfile
import zipfile
from pathlib import Path

from setuptools import build_meta

ROOT = Path(__file__).parents[1]
SOURCE = ["pyproject.toml", "MANIFEST.in", "LICENSE", "README.md", "CHANGELOG.md", "Makefile", "mkdocs.yml", ".ci",
          "nmtkit", "tests", "recipes", "docs", "bench"]


def test_the_wheel_and_the_source_release_hold_what_users_and_packagers_need(tmp_path, monkeypatch):
    tree = tmp_path / "src"
    tree.mkdir()
    for name in SOURCE:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, tree / name, **({"ignore": shutil.ignore_patterns("__pycache__", "*.egg-info", "runs")}
                                          if (ROOT / name).is_dir() else {}))
    monkeypatch.chdir(tree)
    sdist = tmp_path / build_meta.build_sdist(str(tmp_path))
    wheel = tmp_path / build_meta.build_wheel(str(tmp_path))
    with tarfile.open(sdist) as released:
        names = {name.split("/", 1)[1] for name in released.getnames() if "/" in name}
    for needed in ("LICENSE", "Makefile", "recipes/demo.sh", "tests/conftest.py", "tests/models/decoding.py",
                   "docs/index.md", "mkdocs.yml", ".ci/run", "bench/README.md", "bench/gpu_check.sh"):
        assert needed in names, needed
    assert not any(name.startswith(("bench/outputs/", "bench/figures/")) or name.endswith(".pyc") for name in names)
    with zipfile.ZipFile(wheel) as built:
        files = built.namelist()
        metadata = built.read(next(f for f in files if f.endswith(".dist-info/METADATA"))).decode()
    assert "nmtkit/serve/page.html" in files and any(f.endswith(".dist-info/licenses/LICENSE") for f in files)
    assert "License-Expression: MIT" in metadata.splitlines() and not any(f.startswith("tests/") for f in files)
