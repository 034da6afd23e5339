"""The fenced blocks of the documentation's Markdown pages, and the conventions the doc tests hold them to.

Conventions (docs/*.md):

- A shell example is a `````console`` block. A line starting with ``$ `` is a command; it continues on the next
  line while a line ends with ``\\``. The other lines are the output the reader should see: each non-blank one
  must appear, in order, among the lines that the commands above it (since the previous output lines) printed on
  stdout or stderr; ``...`` in it stands for any text (a number that varies, a path).
- ``<!-- not run: REASON -->`` on the line before a block: the harness does not run it (it needs a GPU, several
  machines, a download, a package or data nmtkit does not ship), and lists it with its reason.
- ``<!-- file: PATH -->`` on the line before a block: the block is a file the examples use; the harness writes it
  to PATH in the work folder before it runs the page's examples (the model module of adding-a-model.md).
- Other blocks name their language: ``python``, ``yaml``, ``json``, or ``text`` for what is not run (a usage
  synopsis, a layout, an output shown apart). A block without a language, or in ``bash``/``sh``/``shell``, is an
  error: a shell example could hide there. So is a ``text`` block with a ``$ `` prompt, or with an ``nmtkit`` or
  ``torchrun`` command line that has no placeholder (an upper-case word such as FILE, ``[``, ``|`` or ``...``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
MARKER = re.compile(r"^\s*<!--\s*(not run|file)\s*:\s*(.*?)\s*-->\s*$")
SHELL_TAGS = {"", "bash", "sh", "shell", "zsh", "shell-session"}
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9_]+\b|\[|\||\.\.\.")


@dataclass
class Command:
    """One ``$ `` command of a console block, with the output lines shown after it."""

    line: int  # the line of the page where it starts (1-based)
    text: str  # the command, continuation lines joined with their newlines
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    page: str  # docs/NAME.md
    line: int  # the line of its opening fence (1-based)
    lang: str
    body: list[str]
    marker: Optional[tuple[str, str]]  # ("not run", reason) or ("file", path)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def not_run(self) -> Optional[str]:
        return self.marker[1] if self.marker and self.marker[0] == "not run" else None

    @property
    def file(self) -> Optional[str]:
        return self.marker[1] if self.marker and self.marker[0] == "file" else None

    def commands(self) -> list[Command]:
        """The commands of a console block and the output shown after each."""
        out: list[Command] = []
        lines = iter(enumerate(self.body, self.line + 1))
        for number, text in lines:
            if text.startswith("$ "):
                command = Command(number, text[2:])
                while command.text.endswith("\\"):
                    _, more = next(lines, (0, ""))
                    command.text += "\n" + more
                out.append(command)
            elif text.strip():
                if not out:
                    raise ValueError(f"{self.page}:{number}: output before any '$ ' command")
                out[-1].expected.append(text)
        return out


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a page, with the marker on the line before it, if any."""
    page = f"docs/{path.name}"
    lines = path.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.groups()
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker = MARKER.match(lines[j]) if j >= 0 else None
        found.append(Block(page, start + 1, lang.lower(), body, marker.groups() if marker else None))
        i += 1
    return found


def problems(block: Block) -> list[str]:
    """Why a block breaks the conventions (empty if it keeps them)."""
    if block.lang in SHELL_TAGS:
        return [f"{block.where}: {'a ' + block.lang if block.lang else 'an untagged'} block: shell examples are ```console blocks with "
                "'$ ' prompts; other blocks name their language (text for what is not run)"]
    if block.marker and block.marker[0] == "not run" and not block.marker[1]:
        return [f"{block.where}: '<!-- not run: -->' needs a reason"]
    if block.lang == "console":
        if not any(line.startswith("$ ") for line in block.body):
            return [f"{block.where}: a console block without a '$ ' command"]
        try:
            block.commands()
        except ValueError as e:
            return [str(e)]
    if block.lang == "text":
        for offset, line in enumerate(block.body, 1):
            words = line.split()
            if line.startswith("$ ") or words[:1] in (["nmtkit"], ["torchrun"]) and not PLACEHOLDER.search(line):
                return [f"{block.where}: line {block.line + offset} is a command in a text block: make it a "
                        "```console example (or give it placeholders if it is a synopsis)"]
    return []


def nav_pages() -> list[str]:
    """The pages of mkdocs.yml's nav, in reading order (docs/NAME.md)."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages: list[str] = []

    def walk(item) -> None:
        if isinstance(item, str):
            pages.append(f"docs/{item}")
        elif isinstance(item, dict):
            for value in item.values():
                walk(value)
        elif isinstance(item, list):
            for value in item:
                walk(value)

    walk(config["nav"])
    return [p for p in pages if p.endswith(".md")]


def all_pages() -> list[str]:
    """The nav's pages in its order, then the other pages of docs/ (not in the nav yet) by name."""
    nav = nav_pages()
    return nav + sorted(f"docs/{p.name}" for p in DOCS.glob("*.md") if f"docs/{p.name}" not in nav)


def page_blocks(page: str) -> list[Block]:
    return blocks(ROOT / page)
