"""The LibreOffice help corpus builder (nmtkit.data.helppages) on tiny hand-made .deb packages: paragraphs paired by
page and id, the text cleaned, the split by page, and one-line errors for what is not a help package."""
import re
import subprocess
import sys

import pytest

from nmtkit.data.folders import MARKER
from nmtkit.data.helppages import (
    build_corpus,
    check_package,
    main,
    pairs,
    read_package,
    segments,
    split_of,
    split_pairs,
)
from nmtkit.errors import NmtkitError
from tests.data.helpdebs import page, toy_help, write_deb

SWITCH = ('Press <span id="swlnsys_1" class="switchinline"><span hidden="true" id="MACx_1" class="MAC">Command'
          '</span><span hidden="true" id="defaultx_1">Ctrl</span></span>+F6.')


def test_the_segments_of_a_page():
    html = page("en-US", [
        ("h1", "hd_id1", '<a name="x"></a>Using a <span class="emph">Frame</span>'),
        ("p", "par_id2", "Choose <span class=\"menuitem\">Insert -\n   Frame</span> &amp; click\u00a0OK."),
        ("p", "par_id3", SWITCH),
        ("p", "par_id4", 'Only in <span id="swlnappl_2" class="switchinline"><span hidden="true" id="CALCx_2" '
                         'class="CALC">Calc</span><span hidden="true" id="WRITERx_2" class="WRITER">Writer</span>'
                         '</span>: hy\u00adphen.'),
        ("p", "par_id3", SWITCH.replace("F6", "F7")),  # an id repeated on the page
        ("h", "par_id5", "An odd tag"),
    ]) + '<p dir="auto">no id</p><table><tr><td><p id="par_id6">In a <b>cell</b></p></td></tr></table>'
    assert segments(html) == {
        "hd_id1": ["Using a Frame"], "par_id2": ["Choose Insert - Frame & click OK."],
        "par_id3": ["Press Ctrl+F6.", "Press Ctrl+F7."],  # the default case of a switch
        "par_id4": ["Only in Calc: hyphen."],  # no default: the first case; soft hyphens gone
        "par_id5": ["An odd tag"], "par_id6": ["In a cell"]}


def test_a_block_switch_keeps_every_case_as_its_own_paragraph():
    html = ('<span id="swlnappl_1" class="switch"><span hidden="true" id="CALC_1" class="CALC">'
            '<h2 id="hd_id1">Formatted</h2><p id="par_id2">In Calc.</p></span></span>')
    assert segments(html) == {"hd_id1": ["Formatted"], "par_id2": ["In Calc."]}


def test_a_paragraph_holding_another_keeps_its_whole_text():
    assert segments('<p id="a">Outer <p id="b">inner</p> end</p>') == {"b": ["inner"], "a": ["Outer inner end"]}
    assert segments('<h1 id="a">Title<p id="b">unclosed</h1>') == {"a": ["Titleunclosed"], "b": ["unclosed"]}


def test_read_package(tmp_path):
    deb = write_deb(tmp_path / "h.deb", "zh-CN", {"text/a.html": page("zh-CN", [("h1", "h1", "标题")]),
                                                  "text/b/c.html": page("zh-CN", [("p", "p1", "段落")])})
    assert read_package(deb) == ("zh-CN", {"text/a.html": {"h1": ["标题"]}, "text/b/c.html": {"p1": ["段落"]}})
    gz = write_deb(tmp_path / "gz.deb", "de", {"text/a.html": page("de", [("p", "p1", "Absatz")])}, "gz")
    assert read_package(gz) == ("de", {"text/a.html": {"p1": ["Absatz"]}})
    odd = write_deb(tmp_path / "odd.deb", "de", {"text/a.html": page("de", [("p", "p1", "Absatz")])}, control=b"odd")
    assert read_package(odd) == ("de", {"text/a.html": {"p1": ["Absatz"]}})  # (ar pads a member of odd length)


def test_an_id_repeated_a_different_number_of_times_on_each_side_is_not_paired():
    src = {"text/a.html": {"p1": ["One."], "p2": ["Two.", "Again."]}}
    tgt = {"text/a.html": {"p1": ["Eins.", "Noch."], "p2": ["Zwei.", "Wieder."]}}
    assert list(pairs(src, tgt)) == [("text/a.html", "Two.", "Zwei."), ("text/a.html", "Again.", "Wieder.")]


def test_dev_and_test_keep_pairs_of_up_to_max_words_words_of_the_first_language():
    page_name = next(f"text/p{i}.html" for i in range(100) if split_of(f"text/p{i}.html", 0.5, 0) == "dev")
    six, seven, nine = "one two three four five six", "one two three four five six seven", " ".join(["wort"] * 9)
    src = {page_name: {"exact": [six], "over": [seven], "short": ["a b c"]}}
    tgt = {page_name: {"exact": ["sechs"], "over": ["sieben"], "short": [nine]}}
    kept = split_pairs(src, tgt, dev=0.5, test=0, max_words=6)
    assert kept == {"train": [], "dev": [(six, "sechs"), ("a b c", nine)], "test": []}


def pair_of_packages(tmp_path, en_pages, de_pages):
    return (write_deb(tmp_path / "en.deb", "en-US", {name: page("en-US", b) for name, b in en_pages.items()}),
            write_deb(tmp_path / "de.deb", "de", {name: page("de", b) for name, b in de_pages.items()}))


def lines(folder, name):
    return (folder / name).read_text(encoding="utf-8").splitlines()


def test_paragraphs_pair_by_page_and_id_and_what_does_not_pair_is_left_out(tmp_path):
    en = {"text/a.html": [("h1", "h1", "Title"), ("p", "p1", "One."), ("p", "p2", "Two."), ("p", "p3", "42"),
                          ("p", "p4", "Only English."), ("p", "p5", "Empty."), ("p", "p6", "Broken."),
                          ("p", "p7", "Twice."), ("p", "p7", "Twice.")],
          "text/b.html": [("p", "p1", "One.")], "text/only-en.html": [("p", "p1", "Alone.")]}
    de = {"text/a.html": [("p", "p2", "Zwei."), ("h1", "h1", "Titel"), ("p", "p1", "Eins."), ("p", "p3", "42"),
                          ("p", "p5", ""), ("p", "p6", "Kaputt\x97."), ("p", "p7", "Zweimal."),
                          ("p", "p7", "Zweimal.")],
          "text/b.html": [("p", "p1", "Eins.")]}
    out = tmp_path / "lo"
    counts = build_corpus(*pair_of_packages(tmp_path, en, de), out, dev=0, test=0)
    assert counts == {"train": 4, "dev": 0, "test": 0}
    assert lines(out, "train.en") == ["Title", "One.", "Two.", "Twice."]  # in the order of the English page
    assert lines(out, "train.de") == ["Titel", "Eins.", "Zwei.", "Zweimal."]
    assert sorted(p.name for p in out.iterdir() if p.name != MARKER) == [f"{s}.{lang}" for s in ("dev", "test", "train")
                                                                         for lang in ("de", "en")]


def test_pages_split_by_their_path_and_dev_and_test_hold_short_unseen_segments(tmp_path):
    names = [f"text/p{i}.html" for i in range(60)]
    where = {name: split_of(name, 0.25, 0.25) for name in names}
    assert set(where.values()) == {"train", "dev", "test"}
    assert where == {name: split_of(name, 0.25, 0.25) for name in names}  # deterministic
    long = " ".join(["word"] * 6)
    en = {name: [("p", "shared", "Shared."), ("p", "own", f"Page {i}."), ("p", "long", f"{long} {i}")]
          for i, name in enumerate(names)}
    de = {name: [("p", "shared", "Geteilt."), ("p", "own", f"Seite {i}."), ("p", "long", f"{long} {i} de")]
          for i, name in enumerate(names)}
    out = tmp_path / "lo"
    counts = build_corpus(*pair_of_packages(tmp_path, en, de), out, dev=0.25, test=0.25, max_words=6)
    for split in ("train", "dev", "test"):
        pages = [n for n in names if where[n] == split]
        own = [f"Page {names.index(n)}." for n in pages]
        expected = own if split != "train" else [line for n in pages for line in (
            f"Page {names.index(n)}.", f"{long} {names.index(n)}")]
        if split == "train":
            expected.insert(0, "Shared.")  # a pair is kept once, in train first
        assert sorted(lines(out, f"{split}.en")) == sorted(expected), split  # dev/test: nothing over 6 words
        assert counts[split] == len(expected)
    assert lines(out, "train.de")[lines(out, "train.en").index("Shared.")] == "Geteilt."


def test_the_command_line(tmp_path):
    en, de = toy_help(tmp_path, pages=6, paragraphs=2)
    r = subprocess.run([sys.executable, "-m", "nmtkit.data.helppages", str(en), str(de), "-o", str(tmp_path / "lo"),
                        "--dev", "0.3", "--test", "0.3"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    n = len(lines(tmp_path / "lo", "train.en"))
    assert n > 0 and r.stderr.startswith(f"{tmp_path / 'lo'}: train {n}, dev ")
    assert len(lines(tmp_path / "lo", "train.de")) == n
    r = subprocess.run([sys.executable, "-m", "nmtkit.data.helppages", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "paragraph id" in r.stdout and "--max-words" in r.stdout
    assert main([str(en), str(de), "-o", str(tmp_path / "lo")]) == 2  # the folder is there
    assert main([str(en), str(de), "-o", str(tmp_path / "lo"), "--overwrite", "--dev", "0.6", "--test", "0.5"]) == 2
    assert main([str(en), str(de), "-o", str(tmp_path / "lo"), "--overwrite"]) == 0
    (tmp_path / "lo" / "mine.txt").write_text("mine\n")  # --overwrite replaces only what it made
    assert main([str(en), str(de), "-o", str(tmp_path / "lo"), "--overwrite"]) == 2
    assert (tmp_path / "lo" / "mine.txt").is_file()


@pytest.mark.parametrize("fault", ["not a deb", "truncated", "no data", "zstd", "damaged data", "no pages",
                                   "same language"])
def test_what_is_not_a_pair_of_help_packages_is_one_line_naming_the_file(tmp_path, fault):
    en, de = toy_help(tmp_path, pages=2, paragraphs=1)
    bad = tmp_path / "bad.deb"
    raw = de.read_bytes()
    if fault == "not a deb":
        bad.write_text("<html>404 Not Found</html>")
    elif fault == "truncated":
        bad.write_bytes(raw[:len(raw) // 2])
    elif fault == "no data":
        bad.write_bytes(raw.replace(b"data.tar.xz ", b"other.tar.xz"))  # (the header keeps its width)
    elif fault == "zstd":
        bad.write_bytes(raw.replace(b"data.tar.xz ", b"data.tar.zst"))
    elif fault == "damaged data":
        at = raw.index(b"data.tar.xz") + 60 + 100
        bad.write_bytes(raw[:at] + bytes(50) + raw[at + 50:])
    elif fault == "no pages":
        write_deb(bad, "de", {"index.html": page("de", [("p", "p1", "x")])})
    else:
        bad = en
    message = {"not a deb": "not a Debian package (no ar archive header)", "truncated": "truncated",
               "no data": "no data.tar* member", "zstd": "data.tar.zst: a compression Python's tarfile cannot read",
               "damaged data": "data.tar.xz cannot be read",
               "no pages": "holds no LibreOffice help pages", "same language": "both hold the help in en-US"}[fault]
    with pytest.raises(NmtkitError, match=re.escape(message)) as e:
        build_corpus(en, bad, tmp_path / "lo")
    assert str(bad) in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "lo").exists()


def test_a_package_cut_short_or_without_its_members_is_not_a_whole_package(tmp_path):
    """(what the recipes check of a .deb they download before they keep it)"""
    en, _ = toy_help(tmp_path, pages=2, paragraphs=1)
    check_package(en)
    raw = en.read_bytes()
    (tmp_path / "cut.deb").write_bytes(raw[:len(raw) - 10])
    (tmp_path / "other.deb").write_bytes(raw.replace(b"debian-binary   ", b"other-binary    ", 1))
    for name, says in (("cut.deb", "truncated (data.tar.xz is cut short)"),
                       ("other.deb", "not a Debian package (members other-binary, control.tar.xz, data.tar.xz)")):
        with pytest.raises(NmtkitError, match=re.escape(f"{tmp_path / name}: {says}")):
            check_package(tmp_path / name)
