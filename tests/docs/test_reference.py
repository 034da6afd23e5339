"""The reference pages keep up with the code: every subcommand has a page that names every option of its --help
and shows an example of it, and the model catalogue has every architecture, its options and its inputs and
outputs."""
from __future__ import annotations

import re

import click
import pytest
from click import Option

from nmtkit.cli import main
from nmtkit.models.registry import MODELS, model_names
from tests.docs.markdown import DOCS, page_blocks

#: the page of each subcommand (a few small commands live on the page of the command they serve)
PAGES = {
    "preprocess": "preprocess.md",
    "check-corpus": "preprocess.md",
    "train": "train.md",
    "translate": "translate.md",
    "caption": "caption.md",
    "serve": "serve.md",
    "score": "score.md",
    "compare": "compare.md",
    "replace-unk": "replace-unk.md",
    "align": "replace-unk.md",
    "bucket-bleu": "bucket-bleu.md",
    "plot-attn": "plot-attn.md",
    "average": "average.md",
    "export": "export.md",
    "demo-corpus": "quickstart.md",
}


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def named(flag: str, text: str) -> bool:
    """Whether ``flag`` (``--max-len``) appears in ``text`` as itself, not as part of a longer flag."""
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) is not None


def test_every_subcommand_has_a_page():
    assert sorted(PAGES) == sorted(main.commands), "a subcommand without a page in PAGES, or a page of none"


@pytest.mark.parametrize("command", sorted(PAGES))
def test_the_page_names_every_option(command):
    text = page(PAGES[command])
    cmd = main.commands[command]
    params = getattr(cmd, "base_params", cmd.params)  # train: its own options, not the last --arch's
    flags = [max(p.opts, key=len) for p in params if isinstance(p, Option) and not p.hidden and p.name != "help"]
    flags += [f for p in params if isinstance(p, Option) for f in p.secondary_opts]
    missing = [f for f in flags if not named(f, text)]
    assert not missing, f"docs/{PAGES[command]} does not mention {', '.join(missing)} of 'nmtkit {command}'"


@pytest.mark.parametrize("command", sorted(PAGES))
def test_the_page_shows_an_example(command):
    commands = [c.text for b in page_blocks(f"docs/{PAGES[command]}") if b.lang == "console" for c in b.commands()]
    assert any(re.search(rf"(^|[|;&(]\s*|\$\()nmtkit {re.escape(command)}\b", c) for c in commands), \
        f"docs/{PAGES[command]} has no console example of 'nmtkit {command}'"


def shown_form(option: Option, ctx: click.Context) -> str:
    """What an options table gives as the form of ``option``'s value: its choices, its metavar, or nothing (a
    switch), each in backticks."""
    if option.is_flag:
        return ""
    if isinstance(option.type, click.Choice):
        return ", ".join(f"`{choice}`" for choice in option.type.choices)
    return f"`{option.make_metavar(ctx)}`"


@pytest.mark.parametrize("command", sorted(PAGES))
def test_the_options_tables_give_the_forms_that_help_shows(command):
    """A row ``| `--flag` | `FORM` | ...`` (or ``| `--a`, `--b` | `FORM-A`, `FORM-B` |``) gives the form --help
    shows, in backticks; rows whose second column is not such a form (a default, a sentence) are not tables of
    forms."""
    cmd = main.commands[command]
    ctx = click.Context(cmd)
    by_flag = {flag: p for p in getattr(cmd, "base_params", cmd.params) if isinstance(p, Option) for flag in p.opts}
    wrong = []
    for line in page(PAGES[command]).splitlines():
        row = re.match(r"\| ((?:`-[^`]+`(?:, | / )?)+) \| ([^|]*) \|", line)
        flags = [flag for flag in re.findall(r"`(-[^`]+)`", row.group(1)) if flag in by_flag] if row else []
        form = row.group(2).removesuffix(" (repeatable)").strip() if row else ""
        if not flags or (form and not re.fullmatch(r"`[^`]+`(, `[^`]+`)*", form)):
            continue
        shown = ", ".join(dict.fromkeys(shown_form(by_flag[flag], ctx) for flag in flags))
        if form != shown and not (len(flags) > 1 and form == ", ".join(shown_form(by_flag[f], ctx) for f in flags)):
            wrong.append(f"{', '.join(flags)}: {form or 'nothing'}, where --help shows {shown or 'nothing'}")
    assert not wrong, f"docs/{PAGES[command]}'s options table: {'; '.join(wrong)}"


def shown_default(option: Option, ctx: click.Context) -> str:
    """The default --help shows for ``option``, as an options table gives it: the value (a switch's as ``on`` or
    ``off``), ``required``, or "" where it shows none."""
    record = option.get_help_record(ctx)
    text = " ".join(record[1].split()) if record else ""
    if text.endswith("[required]"):
        return "required"
    found = re.search(r"\[default: ([^\[\]]*)\]$", text)
    if not found:
        return ""
    value = found.group(1)
    if option.is_flag and value in ("True", *(f.lstrip("-") for f in option.opts)):
        return "on"
    if option.is_flag and value in ("False", *(f.lstrip("-") for f in option.secondary_opts)):
        return "off"
    return value


@pytest.mark.parametrize("command", sorted(PAGES))
def test_the_options_tables_give_the_defaults_that_help_shows(command):
    """In a table whose header has a ``default`` column, a row's default is the one --help shows (the values of the
    row's options in turn, comma-separated); "required" may go on with a note; where --help shows none, the
    column says in words what happens."""
    cmd = main.commands[command]
    ctx = click.Context(cmd)
    by_flag = {flag: p for p in getattr(cmd, "base_params", cmd.params) if isinstance(p, Option) for flag in p.opts}
    wrong, column, checked = [], None, 0
    for line in page(PAGES[command]).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if not cells:
            column = None
        elif cells[0] == "option":
            column = cells.index("default") if "default" in cells else None
        flags = [f for f in re.findall(r"`(-[^`]+)`", cells[0]) if f in by_flag] if cells and column else []
        if not flags:
            continue
        shown = ", ".join(dict.fromkeys(shown_default(by_flag[flag], ctx) for flag in flags))
        given = cells[column]
        checked += bool(shown)
        if shown and not (given == shown or shown == "required" and given.startswith("required ")):
            wrong.append(f"{', '.join(flags)}: {given or 'nothing'}, where --help shows {shown}")
    assert not wrong, f"docs/{PAGES[command]}'s options table: {'; '.join(wrong)}"
    assert checked or command in ("average", "check-corpus", "demo-corpus", "replace-unk"), \
        f"docs/{PAGES[command]}: no default of 'nmtkit {command}' checked (is its table's header still there?)"


def sections(text: str) -> dict[str, str]:
    """The ``## `` sections of a page by heading."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


@pytest.mark.parametrize("arch", model_names())
def test_the_model_catalogue_has_every_architecture_and_its_options(arch):
    by_heading = sections(page("models.md"))
    own = [body for heading, body in by_heading.items() if arch in re.split(r"[,\s]+", heading)]
    assert own, f"docs/models.md has no '## ' section whose heading names {arch}"
    missing = [o.name for o in MODELS[arch].options if f"`{o.name}`" not in own[0]]
    assert not missing, f"docs/models.md's section of {arch} does not name its options {', '.join(missing)}"


def test_the_model_catalogue_tables_inputs_and_outputs_of_every_architecture():
    table = sections(page("models.md"))["Inputs and outputs"]
    rows = {line.split("|")[1].strip().strip("`") for line in table.splitlines() if line.startswith("| `")}
    assert rows == set(model_names())
