import os
import re
import stat
import threading

import pytest

from nmtkit.data.text import (
    atomic_output,
    check_parallel,
    check_writable,
    count_lines,
    iter_lines,
    read_lines,
    reference_streams,
    strip_newline,
)
from nmtkit.errors import NmtkitError


def test_count_lines_counts_a_last_line_without_newline(tmp_path):
    (tmp_path / "a").write_bytes(b"x\ny\nz")
    (tmp_path / "b").write_bytes(b"x\ny\n")
    assert count_lines(tmp_path / "a") == 3
    assert count_lines(tmp_path / "b") == 2


def test_invalid_utf8_names_file_and_line(tmp_path):
    (tmp_path / "a").write_bytes(b"ok\nstill ok\nbad \xff here\n")
    with pytest.raises(NmtkitError, match=r"a:3: invalid UTF-8 \(byte 5 of the line\)"):
        list(iter_lines(tmp_path / "a"))


def test_windows_line_endings_are_read_as_lines_and_references_missing_are_none(tmp_path):
    assert strip_newline(b"a b\r\n") == b"a b" and strip_newline(b"a\n") == b"a" and strip_newline(b"a") == b"a"
    (tmp_path / "crlf").write_bytes(b"one\r\ntwo\r\n")
    assert read_lines(tmp_path / "crlf") == ["one", "two"]
    assert reference_streams(["a\tb", "c"]) == [["a", "c"], ["b", None]]  # (None: a line of fewer references)


def test_check_parallel_names_both_files_and_counts(tmp_path):
    (tmp_path / "x.en").write_text("1\n2\n3\n")
    (tmp_path / "x.de").write_text("1\n2\n")
    with pytest.raises(NmtkitError, match=r"x\.en has 3 lines but .*x\.de has 2"):
        check_parallel(tmp_path / "x.en", tmp_path / "x.de")


def test_atomic_output_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_output(target) as f:
            f.write("partial")
            raise RuntimeError("boom")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


@pytest.mark.parametrize("counts, bad", [((3, 2), 1), ((2, 3), 1), ((2, 2, 3), 2), ((3, 3, 2), 2), ((2, 1, 2), 1)])
def test_check_parallel_rejects_a_file_longer_or_shorter_than_the_first(tmp_path, counts, bad):
    """Any file whose line count differs from the first one's, either way, is named with both counts."""
    paths = [tmp_path / f"f{i}" for i in range(len(counts))]
    for path, n in zip(paths, counts):
        path.write_text("x\n" * n)
    message = f"{re.escape(str(paths[0]))} has {counts[0]} lines but {re.escape(str(paths[bad]))} has {counts[bad]}:"
    with pytest.raises(NmtkitError, match=message):
        check_parallel(*paths)


def test_check_parallel_returns_the_common_line_count(tmp_path):
    for name in "abc":
        (tmp_path / name).write_text("x\ny\nz")
    assert check_parallel(tmp_path / "a", tmp_path / "b", tmp_path / "c") == 3


def test_a_byte_order_mark_opening_any_line_is_dropped_and_one_inside_a_line_kept(tmp_path):
    from nmtkit.data.text import decode_line, read_lines

    # (two files joined by `cat`, each opening with a mark: the second one's opens line 2)
    (tmp_path / "bom").write_bytes(b"\xef\xbb\xbfa b\n\xef\xbb\xbfc\nd\xef\xbb\xbf\n")
    assert read_lines(tmp_path / "bom") == ["a b", "c", "d\ufeff"]
    assert decode_line(b"\xef\xbb\xbfx", "f", 1) == "x" and decode_line(b"\xef\xbb\xbfx", "f", 2) == "x"


def test_atomic_output_writes_through_a_link_and_keeps_the_permissions(tmp_path):
    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_text("old\n")
    target.chmod(0o640)
    link.symlink_to(target.name)
    with atomic_output(link) as f:
        f.write("new\n")
    assert link.is_symlink() and target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 == 0o640


def test_atomic_output_names_the_file_it_cannot_make(tmp_path):
    with pytest.raises(NmtkitError, match=r"^/proc/nmtkit-test\.txt: cannot write \("):
        with atomic_output("/proc/nmtkit-test.txt") as f:
            f.write("x")


def test_a_pipe_or_a_device_is_written_into_not_replaced(tmp_path):
    """`-o FIFO` (a co-process reading the output; /dev/stdout, a device, alike): no temporary file renamed over it."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    check_writable(fifo, "-o")
    with atomic_output(fifo) as f:
        f.write("eins\n")
    reader.join(10)
    assert got == [b"eins\n"] and stat.S_ISFIFO(os.stat(fifo).st_mode) and os.listdir(tmp_path) == ["out.fifo"]


def test_old_mac_line_endings_are_warned_of_and_crlf_is_not(tmp_path, capfd):
    """(A file of \\r alone was one line, silently: OpenNMT-py, reading in text mode, sees 3.)"""
    (tmp_path / "mac.en").write_bytes(b"a\rb\rc\r")
    (tmp_path / "dos.en").write_bytes(b"a\r\nb\r\nc\r\n")
    (tmp_path / "one.en").write_bytes(b"x\n")
    assert check_parallel(tmp_path / "mac.en", tmp_path / "one.en") == 1
    assert f"{tmp_path / 'mac.en'}: 3 carriage returns (\\r) without a newline after them, in 1 line(s)" in \
        capfd.readouterr().err
    assert check_parallel(tmp_path / "dos.en", tmp_path / "dos.en") == 3
    assert "carriage returns" not in capfd.readouterr().err


def test_a_compressed_file_is_refused_saying_how_to_decompress_it(tmp_path):
    """(a gzip-compressed train.de.gz was read as text: warned of as old Mac line endings, then its line count
    refused; translate -i wrote an empty line for each of its lines, as invalid UTF-8)"""
    import bz2
    import gzip
    import lzma

    from nmtkit.data.text import check_readable

    text = "ein Satz\n" * 50
    for name, packed, hint in (("t.gz", gzip.compress(text.encode()), "gzip-compressed; nmtkit reads files "
                                "uncompressed: decompress it first (gunzip -k "),
                               ("t.bz2", bz2.compress(text.encode()), "bzip2-compressed; "),
                               ("t.xz", lzma.compress(text.encode()), "xz-compressed; "),
                               ("t.zst", b"\x28\xb5\x2f\xfd" + b"\x00" * 20, "zstd-compressed; ")):
        (tmp_path / name).write_bytes(packed)
        with pytest.raises(NmtkitError) as e:
            check_readable(tmp_path / name)
        assert str(e.value).startswith(f"{tmp_path / name}: {hint}")
    for text in ("BZh9 is not bzip2\n", "\x1f" + "x\n", "plain\n"):  # (text that opens like one: read)
        (tmp_path / "t.txt").write_text(text)
        assert check_readable(tmp_path / "t.txt") == tmp_path / "t.txt"

