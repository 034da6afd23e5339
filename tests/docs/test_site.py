"""The documentation site builds with mkdocs --strict: every page of the nav exists, and every link between
pages, and every anchor, points somewhere (mkdocs.yml's validation settings make each a warning, --strict an
error)."""
from __future__ import annotations

import subprocess
import sys

from tests.docs.markdown import DOCS, ROOT, nav_pages


def test_mkdocs_build_strict(tmp_path):
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        raise AssertionError("mkdocs is not installed: pip install -e '.[docs]' (make test installs it)") from None
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                        "--site-dir", str(tmp_path / "site")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "site" / "quickstart" / "index.html").is_file()


def test_the_nav_reads_in_order_and_starts_at_home():
    pages = nav_pages()
    assert pages[:3] == ["docs/index.md", "docs/install.md", "docs/quickstart.md"]
    assert len(pages) == len(set(pages))
    assert all((DOCS.parent / p).is_file() for p in pages)
