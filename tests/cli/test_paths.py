"""Outputs never overwrite inputs: every command's file options are classed as read or written, and a written
file that is an input, the standard input or another output is refused before any work."""
from __future__ import annotations

import os
import subprocess
import sys

import click

from nmtkit.cli import main
from nmtkit.cli.paths import Command, ReadFile, WriteFile
from nmtkit.cli.train import command as train_command
from tests.conftest import run


def test_every_command_checks_its_outputs_and_classes_each_file_option():
    train_command.parse_args(click.Context(train_command), ["--data", "d"])  # (its options, with the architecture's)
    for name in main.list_commands(click.Context(main)):
        command = main.get_command(click.Context(main), name)
        assert isinstance(command, Command), name
        for param in command.params:
            if isinstance(param.type, click.Path) and not param.type.dir_okay:
                assert isinstance(param.type, (ReadFile, WriteFile)), (name, param.name)


def _refused(args, files, message):
    before = {f: f.read_bytes() for f in files}
    result = run(args, ok=False)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"error: {message}"]
    assert {f: f.read_bytes() for f in files} == before


def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path, text_dir):
    src, tgt = text_dir / "test.en", text_dir / "test.de"
    _refused(["align", "--src", src, "--tgt", tgt, "-o", src], [src],
             f"--output {src}: is the file of --src; write the output to another file")
    alias = tmp_path / "same.de"
    os.link(tgt, alias)  # another name for the reference: the same file
    _refused(["compare", "-r", tgt, "--sys", f"a={src}", "--sys", f"b={src}", "--csv", alias], [tgt],
             f"--csv {alias}: is the file of --ref; write the output to another file")
    _refused(["bucket-bleu", "--src", src, "--ref", tgt, "--hyp", f"a={tgt}", "--csv", tmp_path / "t.csv",
              "--plot", tmp_path / "t.csv"], [src, tgt],
             f"--plot {tmp_path / 't.csv'}: --csv writes this file too; give each output its own file")
    _refused(["compare", "-r", tgt, "--sys", f"a={src},{tgt}", "--sys", f"b={src}", "--json", src], [src, tgt],
             f"--json {src}: is the file of --sys; write the output to another file")


def test_translate_refuses_to_write_over_its_model_or_its_own_outputs(trained_ckpt, text_dir, tmp_path):
    src = text_dir / "test.en"
    _refused(["translate", "-m", trained_ckpt, "-i", src, "-o", trained_ckpt], [trained_ckpt],
             f"--output {trained_ckpt}: is the file of --model; write the output to another file")
    out = tmp_path / "out.de"
    _refused(["translate", "-m", trained_ckpt, "-i", src, "-o", out, "--attention-out", out], [],
             f"--attention-out {out}: --output writes this file too; give each output its own file")
    (tmp_path / "link").symlink_to(tmp_path)  # (one file by two names: through a link to its folder)
    _refused(["translate", "-m", trained_ckpt, "-i", src, "-o", out, "--attention-out", tmp_path / "link" / "out.de"],
             [], f"--attention-out {tmp_path / 'link' / 'out.de'}: --output writes this file too; give each output its "
             "own file")
    assert not out.exists()


def test_two_outputs_to_the_standard_output_are_refused(trained_ckpt, text_dir):
    src = text_dir / "test.en"
    message = "--alignments -: --output writes to the standard output too, and the two would mix; give --alignments a file"
    for output in ([], ["-o", "-"]):
        _refused(["translate", "-m", trained_ckpt, "-i", src, *output, "--alignments", "-"], [src], message)


def test_a_file_that_is_not_text_is_never_written_to_the_standard_output(trained_ckpt, text_dir, tmp_path,
                                                                          monkeypatch):
    """(a checkpoint or an HDF5 file: '-' named a file '-' in the current folder, as /dev/stdout failed in h5py)"""
    monkeypatch.chdir(tmp_path)
    for args, given in ((["average", trained_ckpt, trained_ckpt, "-o"], "-"),
                        (["translate", "-m", trained_ckpt, "-i", text_dir / "test.en", "--attention-out"], "/dev/stdout")):
        option = "--output" if args[0] == "average" else "--attention-out"
        _refused([*args, given], [], f"{option} {given}: writes a file that is not a stream of text; name a "
                 "file (not a pipe or a device)")
    assert not (tmp_path / "-").exists()


def test_a_file_that_is_not_text_is_never_written_into_a_pipe(trained_ckpt, text_dir, tmp_path):
    """(`average -o FIFO` hung reading the pipe to see whether it held an average; `--attention-out FIFO` replaced
    the pipe by a file, and a device, /dev/null or /dev/full run as root, alike)"""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for args in (["average", trained_ckpt, trained_ckpt, "-o", fifo],
                 ["translate", "-m", trained_ckpt, "-i", text_dir / "test.en", "--attention-out", fifo]):
        option = "--output" if args[0] == "average" else "--attention-out"
        _refused(args, [], f"{option} {fifo}: writes a file that is not a stream of text; name a file (not a pipe or "
                           "a device)")
    assert fifo.is_fifo()


def test_dev_stdout_redirected_to_a_file_is_appended_to_not_replaced(trained_ckpt, text_dir, tmp_path):
    """(`-o /dev/stdout >> log`: the shell's file is written through the process' own stdout, its content kept.)"""
    log = tmp_path / "log"
    log.write_text("before\n")
    with open(log, "a") as out:
        subprocess.run([sys.executable, "-m", "nmtkit", "translate", "-m", str(trained_ckpt), "-o", "/dev/stdout"],
                       input="one\n", text=True, stdout=out, stderr=subprocess.DEVNULL, check=True)
    lines = log.read_text().splitlines()
    assert len(lines) == 2 and lines[0] == "before" and lines[1]
    _refused(["translate", "-m", trained_ckpt, "-i", text_dir / "test.en", "-o", "/dev/stdout", "--alignments", "-"],
             [], "--alignments -: --output writes to the standard output too, and the two would mix; give "
                 "--alignments a file")


def test_translate_refuses_to_write_over_the_file_on_its_standard_input(trained_ckpt, text_dir, tmp_path):
    src = tmp_path / "in.en"
    src.write_bytes((text_dir / "test.en").read_bytes())
    with open(src, "rb") as stdin:
        r = subprocess.run([sys.executable, "-m", "nmtkit", "translate", "-m", trained_ckpt, "-o", src], stdin=stdin,
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: --output {src}: is the standard input; write the output to another file"
    assert src.read_bytes() == (text_dir / "test.en").read_bytes()


def test_an_output_that_cannot_be_written_is_one_line(text_dir):
    r = subprocess.run([sys.executable, "-m", "nmtkit", "align", "--src", text_dir / "test.en", "--tgt",
                        text_dir / "test.de", "-o", "/proc/nmtkit-test/lex.tsv"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("error: --output /proc/nmtkit-test/lex.tsv: cannot write in "
                                                    "/proc (")  # (before the alignment is computed)
    assert len(r.stderr.strip().splitlines()) == 1


def test_folders_missing_on_an_outputs_path_are_made_when_it_is_written_only(trained_ckpt, tmp_path):
    run(["translate", "-m", trained_ckpt, "-o", tmp_path / "out" / "today" / "test.de"], input="one\n")
    assert (tmp_path / "out" / "today" / "test.de").read_text().count("\n") == 1
    r = run(["translate", "-m", tmp_path / "none.pt", "-o", tmp_path / "later" / "test.de"], input="one\n", ok=False)
    assert r.exit_code != 0 and not (tmp_path / "later").exists()  # (a command that fails first makes nothing)


def test_dash_reads_the_standard_input_where_an_option_reads_it(trained_ckpt, text_dir):
    """(`-i -` said "-: no such file")"""
    src, ref = text_dir / "test.en", text_dir / "test.de"
    translated = run(["translate", "-m", trained_ckpt, "-i", src]).stdout
    assert run(["translate", "-m", trained_ckpt, "-i", "-"], input=src.read_text()).stdout == translated
    scored = run(["score", "-r", ref, "-i", ref]).stdout
    assert run(["score", "-r", ref, "-i", "-"], input=ref.read_text()).stdout == scored
    r = run(["translate", "-m", trained_ckpt, "-i", "-", "-i", src], input=src.read_text(), ok=False)
    assert r.exit_code == 2 and r.stderr == ("error: -i -: the standard input is read as the one input; give the "
                                             "inputs read side by side as files\n")
