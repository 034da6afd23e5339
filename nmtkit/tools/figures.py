"""What every nmtkit figure shares: matplotlib's Agg backend, fonts that cover CJK, atomic saving.

Fonts: matplotlib's bundled DejaVu Sans has no CJK glyphs, so labels in Chinese, Japanese or
Korean need a system font that covers them. :func:`setup_fonts` puts the first one it finds
(Noto Sans CJK, Source Han Sans, WenQuanYi, ...; or the file given by ``--font``) behind DejaVu
Sans in the fallback list, so Latin text keeps its usual font and CJK falls through to the other.
If the labels need CJK and no such font exists, it says so once (on Debian/Ubuntu:
``apt-get install fonts-noto-cjk`` or ``fonts-wqy-microhei``; or pass ``--font FILE``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

from nmtkit.data.text import PathLike, atomic_output
from nmtkit.errors import NmtkitError
from nmtkit.progress import warn

FORMATS = ("png", "pdf", "svg")
CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans CJK TC", "Noto Sans CJK KR", "Source Han Sans SC",
                "Source Han Sans", "WenQuanYi Micro Hei", "WenQuanYi Zen Hei", "Droid Sans Fallback",
                "Microsoft YaHei", "SimHei", "PingFang SC", "Hiragino Sans GB", "Arial Unicode MS", "AR PL UMing CN")


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def needs_cjk(texts: Iterable[str]) -> bool:
    """Whether any text has a character from the CJK, kana or Hangul blocks."""
    return any(0x1100 <= ord(ch) <= 0x11FF or 0x2E80 <= ord(ch) <= 0x9FFF or 0xAC00 <= ord(ch) <= 0xD7AF
               or 0xF900 <= ord(ch) <= 0xFAFF or 0xFF00 <= ord(ch) <= 0xFFEF for t in texts for ch in t)


def cjk_family(font_file: Optional[PathLike] = None) -> Optional[str]:
    """The family name of ``font_file`` (registered with matplotlib), or of the first installed CJK font."""
    from matplotlib import font_manager

    if font_file is not None:
        path = Path(font_file)
        if not path.is_file():
            raise NmtkitError(f"--font: no such font file: {path}", exit_code=2)
        try:
            font_manager.fontManager.addfont(str(path))
            return font_manager.FontProperties(fname=str(path)).get_name()
        except (RuntimeError, OSError, ValueError) as e:
            raise NmtkitError(f"--font: {path} is not a font matplotlib can read ({e})", exit_code=2) from None
    def known() -> Optional[str]:
        installed = {f.name for f in font_manager.fontManager.ttflist}
        return next((name for name in CJK_FAMILIES if name in installed), None)

    if known() is None:  # matplotlib's font cache may predate the font: register likely files directly
        for file in font_manager.findSystemFonts():
            if any(k in Path(file).name.lower() for k in ("cjk", "wqy", "sourcehan", "fallback", "hei", "ming")):
                try:
                    font_manager.fontManager.addfont(file)
                except (RuntimeError, OSError, ValueError):
                    continue
    return known()


def setup_fonts(texts: Iterable[str], font_file: Optional[PathLike] = None) -> None:
    """Make the labels ``texts`` renderable: DejaVu Sans, then a CJK font when they need one."""
    import matplotlib

    texts = list(texts)
    family = cjk_family(font_file) if font_file is not None or needs_cjk(texts) else None
    if needs_cjk(texts) and family is None:
        import warnings

        warnings.filterwarnings("ignore", message="Glyph .* missing from")  # said once here instead
        warn("no installed font covers the CJK characters of the labels; they will show as boxes. Install one "
             "(Debian/Ubuntu: apt-get install fonts-noto-cjk) or pass --font FILE")
    matplotlib.rcParams["font.family"] = ["DejaVu Sans"] + ([family] if family else [])


def figure_format(path: PathLike, option: str) -> str:
    """The format named by ``path``'s suffix (png, pdf or svg); ``option`` names it in the error."""
    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise NmtkitError(f"{option}: cannot tell the figure format of {path}; name a .png, .pdf or .svg file",
                          exit_code=2)
    return fmt


def save_figure(fig, path: PathLike, option: str = "-o") -> None:
    """Write ``fig`` to ``path`` in the format its suffix names, atomically; then close it."""
    fmt = figure_format(path, option)
    try:
        with atomic_output(path, "wb") as f:
            fig.savefig(f, format=fmt, dpi=150, bbox_inches="tight")
    finally:
        pyplot().close(fig)
