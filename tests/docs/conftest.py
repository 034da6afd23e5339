"""The doc tests' summary: every shell example of the docs that the harness does not run, with its reason."""
from __future__ import annotations

_collected = []


def pytest_collection_modifyitems(session, config, items):
    _collected[:] = [item for item in items if item.nodeid.startswith("tests/docs/test_examples.py")]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _collected:
        return
    from tests.docs.markdown import all_pages, page_blocks

    console = [b for page in all_pages() for b in page_blocks(page) if b.lang == "console"]
    skipped = [b for b in console if b.not_run]
    commands = sum(len(b.commands()) for b in console if not b.not_run)
    terminalreporter.write_sep("-", f"docs: {len(console) - len(skipped)} console blocks ({commands} commands) run, "
                                    f"{len(skipped)} not run (<!-- not run: REASON -->)")
    for b in skipped:
        terminalreporter.write_line(f"  {b.where}: {b.not_run}")
