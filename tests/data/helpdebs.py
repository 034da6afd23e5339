"""Tiny stand-ins for the Debian packages libreoffice-help-LANG, made in the tests: an ``ar`` archive holding
debian-binary, control.tar.xz and data.tar.xz with HTML pages in the layout of the real ones."""
import io
import random
import tarfile
from pathlib import Path

HEAD = """<!DOCTYPE html>
<html lang="{lang}" dir="ltr">
<head>
<meta http-equiv="Content-Type" content="text/html; charset=utf-8">
<title>{title}</title>
</head>
<body>
<header id="TopLeftHeader"><a class="logo" href="{lang}/text/shared/05/new_help.html"><p dir="auto">Help</p></a>
</header>
<div id="DisplayArea" itemprop="softwareHelp" itemscope="true">
"""


def page(lang: str, blocks: list[tuple[str, str, str]]) -> str:
    """A help page: ``blocks`` are (tag, id, inner HTML), the first the title."""
    body = "".join(f'<{tag} id="{key}" class="paragraph" dir="auto">{inner}</{tag}>\n' for tag, key, inner in blocks)
    return HEAD.format(lang=lang, title=blocks[0][2]) + body + "</div>\n</body>\n</html>\n"


def _tar(files: dict[str, bytes], compression: str = "xz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=f"w:{compression}") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def write_deb(path: Path, lang: str, pages: dict[str, str], compression: str = "xz", control: bytes = b"") -> Path:
    """A libreoffice-help .deb at ``path`` holding ``pages`` (name under help/LANG/, e.g. text/swriter/a.html:
    HTML) and a file that is not a page; ``control``: the bytes of its control member (by default a tar)."""
    files = {f"./usr/share/libreoffice/help/{lang}/{name}": html.encode("utf-8") for name, html in pages.items()}
    files[f"./usr/share/libreoffice/help/{lang}/bookmarks.js"] = b"var bookmarks = [];\n"
    files[f"./usr/share/doc/libreoffice-help-{lang.lower()}/copyright"] = b"MPL-2.0\n"
    members = [("debian-binary", b"2.0\n"), ("control.tar.xz", control or _tar({"./control": b"Package: x\n"})),
               (f"data.tar.{compression}", _tar(files, compression))]
    out = bytearray(b"!<arch>\n")
    for name, data in members:
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode() + data
        out += b"\n" if len(data) % 2 else b""
    path.write_bytes(bytes(out))
    return path


# a toy language: German words for English ones, so that a tiny model has something to learn
WORDS = {"click": "klicken", "the": "die", "button": "Schaltfläche", "open": "öffnen", "save": "speichern",
         "file": "Datei", "menu": "Menü", "window": "Fenster", "close": "schließen", "dialog": "Dialog",
         "select": "wählen", "text": "Text", "table": "Tabelle", "cell": "Zelle", "page": "Seite"}


def toy_help(folder: Path, pages: int = 30, paragraphs: int = 8, seed: int = 1) -> tuple[Path, Path]:
    """libreoffice-help-en-us and -de packages in ``folder``, named as on the Debian mirror: ``pages`` pages of a
    title and ``paragraphs`` paragraphs of 3 to 12 words of the toy language each."""
    rng = random.Random(seed)
    en, de = {}, {}
    for p in range(pages):
        blocks_en, blocks_de = [], []
        for k in range(paragraphs + 1):
            words = rng.choices(list(WORDS), k=rng.randint(2, 4) if k == 0 else rng.randint(3, 12))
            tag, key = ("h1", f"hd_id{p}{k}") if k == 0 else ("p", f"par_id{p}{k}")
            blocks_en.append((tag, key, " ".join(words).capitalize() + ("" if k == 0 else ".")))
            blocks_de.append((tag, key, " ".join(WORDS[w] for w in words).capitalize() + ("" if k == 0 else ".")))
        en[f"text/shared/guide/page{p}.html"] = page("en-US", blocks_en)
        de[f"text/shared/guide/page{p}.html"] = page("de", blocks_de)
    return (write_deb(folder / "libreoffice-help-en-us_7.4.7-1+deb12u14_all.deb", "en-US", en),
            write_deb(folder / "libreoffice-help-de_7.4.7-1+deb12u14_all.deb", "de", de))
