"""A parallel corpus from the LibreOffice help: the Debian packages libreoffice-help-LANG of two languages, their
HTML pages paired by the paragraph id each page carries in every language.

Every ``.html`` page under ``usr/share/libreoffice/help/LANG/text/`` in both packages is read; each paragraph or
heading of the page with an ``id`` (as ``<p id="par_id3155920">``, in table cells and lists too) is one segment,
its text with the markup and soft hyphens removed and the whitespace collapsed. The inline switches that the help
shows by system or application (``<span class="switchinline">``: "Command" on macOS, "Ctrl" elsewhere) keep one
case: the default, or the first where there is none. Segments are paired by page and id (the k-th element of an id
with the k-th, where a page repeats it); pairs with an empty side, the same text on both sides (numbers, code) or
control characters (a few translations whose encoding broke) are left out, and a pair is kept once.

Pages are split deterministically by a hash of their path (the same page goes to the same split for every
language pair): a share to dev, a share to test, the rest to train, so dev and test are unseen pages. A pair already
in train is not repeated in dev or test (nor one of dev in test); dev and test keep segments of at most
``--max-words`` words of the first language; train keeps everything.

Output: ``OUT/{train,dev,test}.{SRC,TGT}``, raw UTF-8, one segment a line, the suffixes the languages' primary tags
(en-US: en, zh-CN: zh); the folder appears whole or not at all.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import lzma
import re
import sys
import tarfile
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterator, Optional, Sequence

from nmtkit.data.folders import atomic_folder, check_output_folder
from nmtkit.data.text import PathLike, check_readable
from nmtkit.errors import NmtkitError

PAGE = re.compile(r"^(?:\./)?usr/share/libreoffice/help/([^/]+)/(text/.+\.html)$")
BLOCKS = {"p", "h", "h1", "h2", "h3", "h4", "h5", "h6"}  # the elements that carry paragraph ids
SPLITS = ("train", "dev", "test")
TEXT_FOLDER = "parallel text folder"  # what build_corpus writes, as its marker names it
DAMAGED = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")  # control characters: broken encodings

Pages = dict[str, dict[str, list[str]]]  # page -> id -> the texts of its elements, in order


class _Segments(HTMLParser):
    """The text of every paragraph or heading with an ``id`` of one page, each inline switch at one case."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        # open buffers, innermost last: [tag, id, text parts] of a paragraph, ["switch", cases] of an inline
        # switch (cases: (is the default?, text)), ["case", is the default?, text parts] of one of its cases
        self.open: list[list] = []
        self.spans: list[str] = []  # what each open span opened: "switch", "case" or ""
        self.segments: dict[str, list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        a = dict(attrs)
        if tag == "span":
            kind = ""
            if "switchinline" in (a.get("class") or "").split():
                kind = "switch"
                self.open.append(["switch", []])
            elif self.open and self.open[-1][0] == "switch":
                kind = "case"
                self.open.append(["case", (a.get("id") or "").startswith("default"), []])
            self.spans.append(kind)
        elif tag in BLOCKS and a.get("id"):
            self.open.append([tag, a["id"], []])

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" and self.spans:
            kind = self.spans.pop()
            if kind == "case" and self.open and self.open[-1][0] == "case":
                _, default, parts = self.open.pop()
                self.open[-1][1].append((default, "".join(parts)))
            elif kind == "switch" and self.open and self.open[-1][0] == "switch":
                cases = self.open.pop()[1]
                self._add(next((text for default, text in cases if default), cases[0][1] if cases else ""))
        elif any(buffer[0] == tag for buffer in self.open):
            while True:  # what was left open inside closes with it
                buffer = self.open.pop()
                if buffer[0] in ("switch", "case"):
                    continue
                text = " ".join("".join(buffer[2]).replace("\xad", "").split())  # soft hyphens dropped
                self.segments.setdefault(buffer[1], []).append(text)
                self._add(text)
                if buffer[0] == tag:
                    break

    def handle_data(self, data: str) -> None:
        self._add(data)

    def _add(self, text: str) -> None:
        """Text into the innermost paragraph or case (the whitespace between a switch's cases is dropped)."""
        if self.open and self.open[-1][0] != "switch":
            self.open[-1][-1].append(text)


def segments(html: str) -> dict[str, list[str]]:
    """The segments of one help page: id -> the texts of its elements with that id, in document order."""
    parser = _Segments()
    parser.feed(html)
    parser.close()
    return parser.segments


def ar_members(path: Path) -> Iterator[tuple[str, bytes]]:
    """The members of the ``ar`` archive ``path`` (a Debian package), in order, as (name, content); a one-line error
    where it is no such archive or a member is cut short."""
    data = path.read_bytes()
    if not data.startswith(b"!<arch>\n"):
        raise NmtkitError(f"{path}: not a Debian package (no ar archive header)")
    at = 8
    while at < len(data):
        header = data[at:at + 60]
        size = header[48:58].strip()
        if len(header) < 60 or header[58:60] != b"`\n" or not size.isdigit():
            raise NmtkitError(f"{path}: truncated or damaged (no whole ar member header at byte {at})")
        name = header[:16].rstrip(b" ").rstrip(b"/").decode(errors="replace")
        start, end = at + 60, at + 60 + int(size)
        if end > len(data):
            raise NmtkitError(f"{path}: truncated ({name} is cut short)")
        yield name, data[start:end]
        at = end + (end % 2)  # (members start at even offsets)


def _ar_member(path: Path, prefix: str) -> tuple[str, bytes]:
    """The name and content of the first member of the ``ar`` archive ``path`` whose name starts with ``prefix``."""
    found = next((member for member in ar_members(path) if member[0].startswith(prefix)), None)
    if found is None:
        raise NmtkitError(f"{path}: not a Debian package (no {prefix}* member)")
    return found


def check_package(path: PathLike) -> None:
    """That ``path`` is a whole Debian package (its members, ``debian-binary`` first, fill the file, one of them
    ``data.tar*``), else a one-line error: a download cut short is found before it is kept."""
    names = [name for name, _ in ar_members(Path(path))]
    if names[:1] != ["debian-binary"] or not any(name.startswith("data.tar") for name in names):
        raise NmtkitError(f"{path}: not a Debian package (members {', '.join(names) or 'none'})")


def read_package(path: PathLike) -> tuple[str, Pages]:
    """The language (as the package's help folder names it: en-US, de, zh-CN) and the segments of every page of a
    libreoffice-help-LANG ``.deb``."""
    path = check_readable(path)
    member, data = _ar_member(path, "data.tar")
    compression = member[len("data.tar."):]
    if compression not in ("", "xz", "gz", "bz2"):
        raise NmtkitError(f"{path}: {member}: a compression Python's tarfile cannot read (xz, gz, bz2 or none)")
    languages, pages = set(), {}
    try:
        mode = f"r:{compression}"  # one of the four modes checked above, which mypy cannot see in a formatted string
        with tarfile.open(fileobj=io.BytesIO(data), mode=mode) as tar:  # type: ignore[call-overload]
            for info in tar:
                match = PAGE.match(info.name)
                if not (match and info.isfile()):
                    continue
                member_file = tar.extractfile(info)  # a regular file: never None
                raw = member_file.read() if member_file else b""
                try:
                    html = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise NmtkitError(f"{path}: {info.name}: not UTF-8 ({e})") from None
                languages.add(match[1])
                pages[match[2]] = segments(html)
    except (tarfile.TarError, lzma.LZMAError, zlib.error, EOFError, OSError) as e:
        raise NmtkitError(f"{path}: {member} cannot be read ({str(e) or type(e).__name__})") from None
    if not pages:
        raise NmtkitError(f"{path}: holds no LibreOffice help pages (usr/share/libreoffice/help/LANG/text/*.html)")
    if len(languages) > 1:
        raise NmtkitError(f"{path}: holds the help of several languages ({', '.join(sorted(languages))})")
    return languages.pop(), pages


def suffix(language: str) -> str:
    """The file suffix of a help language: its primary tag in lower case (en-US: en, zh-CN: zh)."""
    return language.split("-")[0].lower()


def split_of(page: str, dev: float, test: float) -> str:
    """The split of a page: by a hash of its path, ``dev`` of the pages go to dev, ``test`` to test."""
    u = int.from_bytes(hashlib.sha256(page.encode("utf-8")).digest()[:8], "big") / 2 ** 64
    return "dev" if u < dev else "test" if u < dev + test else "train"


def pairs(src: Pages, tgt: Pages) -> Iterator[tuple[str, str, str]]:
    """(page, source text, target text) of every pair of segments with the same page and id, pages in order."""
    for page in sorted(src.keys() & tgt.keys()):
        theirs = tgt[page]
        for key, texts in src[page].items():
            if len(theirs.get(key, ())) == len(texts):  # an id repeated on a page: k-th with k-th
                for a, b in zip(texts, theirs[key]):
                    if a and b and a != b and not (DAMAGED.search(a) or DAMAGED.search(b)):
                        yield page, a, b


def split_pairs(src: Pages, tgt: Pages, dev: float = 0.04, test: float = 0.06,
                max_words: int = 80) -> dict[str, list[tuple[str, str]]]:
    """The pairs of two packages' pages by split (see the module's docstring)."""
    if not (0 <= dev and 0 <= test and dev + test < 1):
        raise NmtkitError(f"--dev {dev} and --test {test}: shares of the pages, each >= 0, together below 1",
                          exit_code=2)
    found: dict[str, list[tuple[str, str]]] = {name: [] for name in SPLITS}
    for page, a, b in pairs(src, tgt):
        name = split_of(page, dev, test)
        if name == "train" or len(a.split()) <= max_words:
            found[name].append((a, b))
    seen: set[tuple[str, str]] = set()
    kept: dict[str, list[tuple[str, str]]] = {}
    for name in SPLITS:  # train first: dev and test never repeat a training pair
        kept[name] = []
        for pair in found[name]:
            if pair not in seen:
                seen.add(pair)
                kept[name].append(pair)
    return kept


def build_corpus(src_deb: PathLike, tgt_deb: PathLike, out: PathLike, dev: float = 0.04, test: float = 0.06,
                 max_words: int = 80, overwrite: bool = False) -> dict[str, int]:
    """Write ``out/{train,dev,test}.{SRC,TGT}`` from two libreoffice-help ``.deb`` files; pairs per split."""
    out = Path(out)
    check_output_folder(out, TEXT_FOLDER, overwrite, "-o", "--overwrite", [src_deb, tgt_deb])
    src_lang, src = read_package(src_deb)
    tgt_lang, tgt = read_package(tgt_deb)
    a, b = suffix(src_lang), suffix(tgt_lang)
    if a == b:
        raise NmtkitError(f"{src_deb} and {tgt_deb}: both hold the help in {src_lang if src_lang == tgt_lang else a}")
    kept = split_pairs(src, tgt, dev, test, max_words)
    if not kept["train"]:
        raise NmtkitError(f"{src_deb} and {tgt_deb}: no paragraphs pair up (no common pages and ids)")
    with atomic_folder(out, TEXT_FOLDER, overwrite, "-o", "--overwrite", [src_deb, tgt_deb]) as tmp:
        for name, rows in kept.items():
            for k, lang in enumerate((a, b)):
                (tmp / f"{name}.{lang}").write_text("".join(row[k] + "\n" for row in rows), encoding="utf-8")
    return {name: len(rows) for name, rows in kept.items()}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command line: ``python -m nmtkit.data.helppages SRC.deb TGT.deb -o OUT``."""
    parser = argparse.ArgumentParser(
        prog="python -m nmtkit.data.helppages", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A parallel corpus (train/dev/test) from the LibreOffice help of two languages: two Debian\n"
                    "packages libreoffice-help-LANG (.deb), their pages' paragraphs paired by paragraph id and\n"
                    "split by page. Writes OUT/{train,dev,test}.{SRC,TGT}, SRC and TGT the languages' primary\n"
                    "tags (en-US: en, zh-CN: zh).",
        epilog="example:\n  apt-get download libreoffice-help-en-us libreoffice-help-de\n"
               "  python -m nmtkit.data.helppages libreoffice-help-en-us_*.deb libreoffice-help-de_*.deb -o lo-ende")
    parser.add_argument("src_deb", metavar="SRC.deb", help="the help package of the source language")
    parser.add_argument("tgt_deb", metavar="TGT.deb", help="the help package of the target language")
    parser.add_argument("-o", "--out", required=True, metavar="OUT", help="the corpus folder to write")
    parser.add_argument("--dev", type=float, default=0.04, metavar="SHARE",
                        help="the share of the help pages held out for dev (default: 0.04)")
    parser.add_argument("--test", type=float, default=0.06, metavar="SHARE",
                        help="the share of the help pages held out for test (default: 0.06)")
    parser.add_argument("--max-words", type=int, default=80, metavar="N",
                        help="dev and test keep segments of at most N source words (default: 80)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace OUT if it is a parallel text folder this command made")
    args = parser.parse_args(argv)
    try:
        counts = build_corpus(args.src_deb, args.tgt_deb, args.out, args.dev, args.test, args.max_words,
                              args.overwrite)
    except NmtkitError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    print(f"{args.out}: " + ", ".join(f"{name} {n:,}" for name, n in counts.items()) + " pairs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
