"""recipes/lib.sh, the machinery the recipes share, on its own: each test sources it in a small script."""
import os
import subprocess
import zipfile
from pathlib import Path

LIB = Path(__file__).parents[2] / "recipes" / "lib.sh"


def script(tmp_path, body, *args, **env):
    """Runs ``body`` as a recipe named demo.sh that sources lib.sh and parses its options ("w" the WORKDIR)."""
    path = tmp_path / "demo.sh"
    path.write_text(f'set -euo pipefail\nsource "{LIB}"\noptions "{tmp_path}/w" "$@"\n{body}\n')
    return subprocess.run(["bash", str(path), *args], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, **env})


def test_step_runs_a_command_and_a_failure_stops_with_one_line_naming_the_stage(tmp_path):
    r = script(tmp_path, 'stage "1. data"\nstep true\nstep sh -c "echo oops >&2; exit 3"\necho after')
    assert r.returncode == 1 and "after" not in r.stdout
    assert r.stderr.splitlines() == ["== 1. data", "oops", 'error: step 1. data failed: sh -c echo oops >&2; exit 3']


def test_a_dry_run_prints_each_step_and_runs_none(tmp_path):
    r = script(tmp_path, 'step touch "$work/x"\ninto "$work/y" echo hi\necho "dry=$dry"', "--dry-run")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"touch {tmp_path}/w/x ", f"echo hi > {tmp_path}/w/y", "dry=1"]
    assert not (tmp_path / "w").exists()


def test_a_dry_run_prints_the_downloads_with_the_other_steps(tmp_path):
    """(The steps of a download, run where the recipe reads its path as $(fetch URL), went to standard error.)"""
    r = script(tmp_path, 'p=$(fetch https://x.org/a.gz)\necho "path=$p"', "--dry-run", DOWNLOADER="get")
    d = f"{tmp_path}/w/downloads"
    assert r.returncode == 0 and r.stdout.splitlines() == [
        f"mkdir -p {d} ", f"get {d}/a.gz.part https://x.org/a.gz ", f"mv {d}/a.gz.part {d}/a.gz ", f"path={d}/a.gz"]


def test_a_dry_run_prints_commands_a_shell_runs_as_printed(tmp_path):
    """(`into`'s output was printed unquoted: `> my work/y` writes to `my`)"""
    r = script(tmp_path, 'into "$work/my y" echo hi', "--dry-run", f"{tmp_path}/my work")
    assert r.returncode == 0 and r.stdout == f"echo hi > {tmp_path}/my\\ work/my\\ y\n", r.stderr


def test_into_writes_atomically_skips_what_exists_and_leaves_nothing_when_the_command_fails(tmp_path):
    (tmp_path / "w").mkdir()
    r = script(tmp_path, 'into "$work/a" echo one\ninto "$work/a" echo two\nstage s\n'
                         'into "$work/b" sh -c "echo part; exit 1"')
    assert r.returncode == 1 and r.stderr.splitlines()[-1].startswith("error: step s failed: sh -c")
    assert (tmp_path / "w" / "a").read_text() == "one\n"
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == [".nmtkit-recipe", "a"]


def test_fresh_clears_a_folder_it_made_but_its_marker_or_only_the_names_given(tmp_path):
    work = tmp_path / "f"
    (work / ".hidden").mkdir(parents=True)
    for name in (".nmtkit-workdir", "a b", "..x", "keep"):
        (work / name).write_text("")
    r = script(tmp_path, f'fresh "{work}" "a b" gone')
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in work.iterdir()) == ["..x", ".hidden", ".nmtkit-workdir", "keep"]
    r = script(tmp_path, f'fresh "{work}"')  # (the marker is never removed: a stop halfway leaves the folder ours)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in work.iterdir()) == [".nmtkit-workdir"]


def test_settings_that_are_not_whole_numbers_stop_before_any_step(tmp_path):
    """(they reached nmtkit's options after the data steps, `--max-steps 10k`; a dry run printed them as they were)"""
    for args in ((), ("--dry-run",)):
        r = script(tmp_path, 'whole_numbers STEPS\nstep touch "$work/x"', *args, BEAM="five")
        assert r.returncode == 2 and r.stderr == "error: BEAM: expects a whole number above 0, got 'five'\n"
        r = script(tmp_path, 'whole_numbers STEPS\nstep touch "$work/x"', *args, STEPS="10k")
        assert r.returncode == 2 and r.stderr == "error: STEPS: expects a whole number above 0, got '10k'\n"
    assert not (tmp_path / "w" / "x").exists()


def test_options(tmp_path):
    r = script(tmp_path, 'echo "$dry $gpus ${launcher[*]} $work"', "--gpus", "2", "elsewhere")
    assert r.stdout == "0 2 torchrun --nproc-per-node 2 -m nmtkit elsewhere\n"
    assert script(tmp_path, 'echo "${launcher[*]} $work"').stdout == f"nmtkit {tmp_path}/w\n"
    r = script(tmp_path, "", "--gpus=x")
    assert r.returncode == 2 and r.stderr == "error: --gpus: expects a number of GPUs, got 'x'\n"
    r = script(tmp_path, "", "--nope")
    assert r.returncode == 2 and "unknown option --nope (usage: recipes/demo.sh [--dry-run] [--gpus N]" in r.stderr
    r = script(tmp_path, "echo ran", "here", "--dry-run")  # (an option after WORKDIR, or a second WORKDIR)
    assert r.returncode == 2 and r.stderr.startswith("error: one WORKDIR, and options before it; got also: --dry-run")
    r = script(tmp_path, "echo ran", "-h")
    assert r.returncode == 0 and r.stdout.startswith("usage: recipes/demo.sh [--dry-run] [--gpus N] [WORKDIR]")
    for args in ((), ("--dry-run",)):  # (a wrong DEVICE reached the first training, after the data steps)
        r = script(tmp_path, "echo ran", *args, DEVICE="gpu9")
        assert r.returncode == 2 and r.stderr == ("error: DEVICE: expects auto, cpu, mps, cuda or cuda:N (nmtkit's "
                                                  "--device), got 'gpu9'\n") and not r.stdout
    assert script(tmp_path, "echo ran", DEVICE="cuda:1").stdout == "ran\n"


def test_fetch_downloads_once_through_a_part_file_and_refuses_a_bad_download(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    (served / "a.txt").write_text("data\n")
    (served / "b.gz").write_text("not gzip")
    get = tmp_path / "get.sh"
    get.write_text(f'#!/bin/sh\necho "$2" >> "{tmp_path}/log"\ncp "{served}/$(basename "$2")" "$1"\n')
    get.chmod(0o755)
    body = 'stage fetching\nfor i in 1 2; do fetch https://x.org/a.txt; done\nfetch https://x.org/b.gz'
    r = script(tmp_path, body, DOWNLOADER=str(get))
    assert r.returncode == 1
    assert r.stdout.splitlines() == [f"{tmp_path}/w/downloads/a.txt"] * 2
    assert (tmp_path / "log").read_text().split() == ["https://x.org/a.txt", "https://x.org/b.gz"]
    assert r.stderr.splitlines()[-1] == ("error: step fetching failed: https://x.org/b.gz: not a readable gzip file "
                                         "(gzip -t) (removed; run again to fetch it again)")
    assert sorted(p.name for p in (tmp_path / "w" / "downloads").iterdir()) == ["a.txt"]
    r = script(tmp_path, "stage s\nfetch /no/such/file")
    assert r.returncode == 1 and r.stderr.splitlines()[-1] == "error: step s failed: /no/such/file: no such file or folder"
    with zipfile.ZipFile(served / "c.zip", "w") as z:
        z.writestr("data.json", "x" * 1000)
    damaged = bytearray((served / "c.zip").read_bytes())
    damaged[100] ^= 0xFF  # (a member's bytes: the archive lists it, its CRC fails)
    (served / "c.zip").write_bytes(damaged)
    r = script(tmp_path, "stage s\nfetch https://x.org/c.zip", DOWNLOADER=str(get))
    assert r.returncode == 1 and r.stderr.splitlines()[-1] == ("error: step s failed: https://x.org/c.zip: not a "
                                                               "readable zip archive (removed; run again to fetch it again)")
    assert not (tmp_path / "w" / "downloads" / "c.zip").exists()


def test_a_url_with_a_query_is_downloaded_under_its_file_name(tmp_path):
    """(LINDAT's links end ?sequence=3&isAllowed=y: the query was kept in the name, so the zip was not checked, nor
    unpacked as one)"""
    with zipfile.ZipFile(tmp_path / "TrainDev.zip", "w") as z:
        z.writestr("train.src", "a\n")
    get = tmp_path / "get.sh"
    get.write_text(f'#!/bin/sh\nurl=${{2%%\\?*}}\ncp "{tmp_path}/${{url##*/}}" "$1"\n')
    get.chmod(0o755)
    r = script(tmp_path, "fetch 'https://x.org/handle/TrainDev.zip?sequence=3&isAllowed=y'", DOWNLOADER=str(get))
    assert r.returncode == 0 and r.stdout == f"{tmp_path}/w/downloads/TrainDev.zip\n", r.stderr


def test_train_resumes_a_stopped_run_without_its_warm_start_and_skips_a_finished_one(tmp_path):
    model = tmp_path / "w" / "m"
    body = 'train "$work/m" --data d --init-from base.pt --init-lr --lr 1 --init-optimizer'
    fresh = script(tmp_path, body, "--dry-run").stdout.splitlines()
    assert fresh == [f"nmtkit train --data d --init-from base.pt --init-lr --lr 1 --init-optimizer --save-dir {model} ",
                     f"touch {model}/done "]
    model.mkdir(parents=True)
    (model / "last.pt").write_text("")
    (tmp_path / "w" / ".nmtkit-recipe").write_text("demo.sh\n")  # (a run of this recipe's)
    stopped = script(tmp_path, body, "--dry-run", "--gpus", "1").stdout.splitlines()
    assert stopped[0] == f"torchrun --nproc-per-node 1 -m nmtkit train --data d --lr 1 --save-dir {model} --resume "
    (model / "done").write_text("")
    assert script(tmp_path, body, "--dry-run").stdout == ""


def test_unpacked_fetches_an_archive_as_its_name_and_unpacks_it_once(tmp_path):
    served = tmp_path / "served"
    (served / "a").mkdir(parents=True)
    (served / "a" / "inside.txt").write_text("x\n")
    subprocess.run(["tar", "-czf", str(served / "test.tgz"), "-C", str(served / "a"), "inside.txt"], check=True)
    get = tmp_path / "get.sh"
    get.write_text(f'#!/bin/sh\necho "$2" >> "{tmp_path}/log"\ncp "{served}/test.tgz" "$1"\n')
    get.chmod(0o755)
    body = ('for i in 1 2; do dir=$(unpacked https://x.org/15/test.tgz wmt15-test.tgz); cat "$dir/inside.txt"; done\n'
            'dir=$(unpacked https://x.org/16/test.tgz); echo "$dir"\nstage s\ndir=$(unpacked /no/such.tgz)\necho after')
    r = script(tmp_path, body, DOWNLOADER=str(get))
    assert r.returncode == 1 and r.stdout.splitlines() == ["x", "x", f"{tmp_path}/w/unpacked/test"]
    assert (tmp_path / "log").read_text().split() == ["https://x.org/15/test.tgz", "https://x.org/16/test.tgz"]
    assert sorted(p.name for p in (tmp_path / "w" / "downloads").iterdir()) == ["test.tgz", "wmt15-test.tgz"]
    assert (tmp_path / "w" / "unpacked" / "wmt15-test" / "inside.txt").exists()
    assert r.stderr.splitlines()[-1] == "error: step s failed: /no/such.tgz: no such file or folder"


def test_unpacked_takes_a_local_folder_as_the_archive_unpacked_and_names_each_archive_apart(tmp_path):
    """(a folder for an archive went to tar; names that share the part before their first dot shared one folder)"""
    (tmp_path / "ep" / "training").mkdir(parents=True)
    r = script(tmp_path, f'unpacked "{tmp_path}/ep"\nfor n in a.test.zip a.test_pe.tgz b.tar.gz; do unpacked_dir $n; done')
    assert r.returncode == 0 and r.stdout.splitlines() == [f"{tmp_path}/ep", *(f"{tmp_path}/w/unpacked/{name}"
                                                                              for name in ("a.test", "a.test_pe", "b"))]
    assert not (tmp_path / "w" / "unpacked").exists()


def test_a_folder_unpacked_from_another_archive_of_the_same_name_is_refused_not_taken_for_it(tmp_path):
    """(EUROPARL=a/training.tgz, then b/training.tgz, or two inputs of one name: the second was never unpacked, and
    the recipe went on with the first's files)"""
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "inside.txt").write_text(f"{side}\n")
        subprocess.run(["tar", "-czf", str(tmp_path / side / "training.tgz"), "-C", str(tmp_path / side), "inside.txt"],
                       check=True)
    body = 'stage "1. data"\ndir=$(unpacked "$1"); cat "$dir/inside.txt"'
    for _ in range(2):  # (unpacked once, then found)
        r = script(tmp_path, body.replace("$1", "a/training.tgz"))
        assert r.returncode == 0 and r.stdout == "a\n", r.stderr
    r = script(tmp_path, body.replace("$1", f"{tmp_path}/b/training.tgz"))
    assert r.returncode == 1 and r.stdout == "" and r.stderr.splitlines()[-1] == (
        f"error: step 1. data failed: {tmp_path}/w/unpacked/training holds {tmp_path}/a/training.tgz unpacked, not "
        f"{tmp_path}/b/training.tgz: remove {tmp_path}/w/unpacked/training to unpack {tmp_path}/b/training.tgz "
        "instead (two archives of the same name: rename one)")
    assert (tmp_path / "w" / "unpacked" / "training" / "inside.txt").read_text() == "a\n"


def test_a_tool_that_checks_a_download_is_looked_for_before_it_is_fetched(tmp_path):
    """(without tar, a good .tgz was removed as 'not a readable .tar.gz archive', at every run)"""
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("bash", "cat", "mkdir", "basename", "dirname", "head", "ls", "rm", "mv", "cp", "wc", "flock", "find"):
        (tools / tool).symlink_to(subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip())
    get = tmp_path / "get.sh"
    get.write_text(f'#!/bin/sh\necho "$2" >> "{tmp_path}/log"\n')
    get.chmod(0o755)
    r = script(tmp_path, "stage s\nfetch https://x.org/a.tgz", DOWNLOADER=str(get), PATH=str(tools))
    assert r.returncode == 1 and r.stderr.splitlines()[-1] == ("error: step s failed: tar: command not found (it checks "
                                                               "and unpacks a.tgz); install it")
    assert not (tmp_path / "log").exists()


def test_same_lines_removes_the_files_it_finds_unequal_so_that_mended_inputs_mend_the_run(tmp_path):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / ".nmtkit-recipe").write_text("demo.sh\n")
    (tmp_path / "w" / "a").write_text("1\n2\n")
    (tmp_path / "w" / "b").write_text("1\n2\n")
    assert script(tmp_path, 'same_lines "$work/a" "$work/b"').returncode == 0
    (tmp_path / "w" / "b").write_text("1\n")
    r = script(tmp_path, 'stage s\nsame_lines "$work/a" "$work/b"')
    assert r.returncode == 1 and r.stderr.splitlines()[-1] == (f"error: step s failed: {tmp_path}/w/a has 2 lines but "
                                                               f"{tmp_path}/w/b 1 (made from the inputs, removed: mend "
                                                               "the inputs and run again)")
    assert sorted(p.name for p in (tmp_path / "w").iterdir()) == [".nmtkit-recipe"]
    (tmp_path / "mine").mkdir()  # (the user's own corpus, CORPUS=...: never removed)
    (tmp_path / "mine" / "a").write_text("1\n2\n")
    (tmp_path / "mine" / "b").write_text("1\n")
    r = script(tmp_path, f'stage s\nsame_lines "{tmp_path}/mine/a" "{tmp_path}/mine/b"')
    assert r.returncode == 1 and r.stderr.splitlines()[-1] == (f"error: step s failed: {tmp_path}/mine/a has 2 lines "
                                                               f"but {tmp_path}/mine/b 1")
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["a", "b"]


def test_segments_reads_the_text_of_an_sgml_test_set_as_sacrebleu_does(tmp_path):
    (tmp_path / "t.sgm").write_text('<srcset setid="x">\n<doc docid="1">\n<seg id="1"> A  b  </seg>\n'
                                    "<seg id=2>c &amp; d</seg>\n</doc>\n</srcset>\n")
    assert script(tmp_path, f'segments "{tmp_path}/t.sgm"').stdout == "A b\nc &amp; d\n"


def test_moses_tokenises_without_escaping_and_detokenises_and_needs_python_says_what_is_missing(tmp_path):
    (tmp_path / "raw").write_text('He said: "it\'s 5,000 km & more."\n')
    (tmp_path / "tok").write_text('He said : " it \'s 5,000 km & more . "\n')
    r = script(tmp_path, f'moses tokenize en "{tmp_path}/raw"\nmoses detokenize en "{tmp_path}/tok"')
    assert r.stdout.splitlines() == ['He said : " it \'s 5,000 km & more . "', 'He said: "it\'s 5,000 km & more."']
    r = script(tmp_path, "needs_python json ok\nneeds_python no_such_module 'no_such_module: pip install it'")
    assert r.returncode == 2 and r.stderr == "error: no_such_module: pip install it\n"
    assert script(tmp_path, "needs_python no_such_module nope", "--dry-run").returncode == 0


def test_inputs_are_all_named_one_line_each_before_any_step_with_a_dry_run_too(tmp_path):
    (tmp_path / "here").write_text("")
    body = (f'needed "" "A: give it"\ninput B "{tmp_path}/here" https://x.org/b.tgz "{tmp_path}/no/x.en" '
            f'"{tmp_path}/no/x.de" "{tmp_path}/y"\ninputs_found\necho after')
    for args in ((), ("--dry-run",)):
        r = script(tmp_path, body, *args)
        assert r.returncode == 2 and r.stdout == ""
        assert r.stderr.splitlines() == ["error: A: give it", f"error: B: {tmp_path}/no: no such file or folder",
                                         f"error: B: {tmp_path}/y: no such file or folder"]
    assert script(tmp_path, f'input B "{tmp_path}/here"\ninputs_found\necho after').stdout == "after\n"


def test_a_workdir_holds_one_recipe_s_outputs_and_is_stamped_at_its_first_step(tmp_path):
    work = tmp_path / "w"
    assert script(tmp_path, 'stage s', "--dry-run").returncode == 0 and not work.exists()
    assert script(tmp_path, 'stage s\necho "$work"').returncode == 0 and not work.exists()  # (nothing written yet)
    r = script(tmp_path, 'step touch "$work/a"')
    assert r.returncode == 0, r.stderr
    assert (work / ".nmtkit-recipe").read_text() == "demo.sh\n"
    assert script(tmp_path, 'step touch "$work/b"').returncode == 0  # its own: resumed
    (work / ".nmtkit-recipe").write_text("wmt14_ende.sh\n")
    r = script(tmp_path, 'step touch "$work/c"')
    assert r.returncode == 2 and not (work / "c").exists()
    assert r.stderr == (f"error: {work}: holds the outputs of recipes/wmt14_ende.sh, which recipes/demo.sh would take "
                        "for its own (a step whose outputs exist is skipped); choose another folder\n")
    (work / ".nmtkit-recipe").unlink()  # a folder of the user's
    r = script(tmp_path, 'step touch "$work/c"', "--dry-run")
    assert r.returncode == 2 and r.stderr.startswith(f"error: {work}: exists and was not made by recipes/demo.sh "
                                                     "(no .nmtkit-recipe stamp)")
    assert sorted(p.name for p in work.iterdir()) == ["a", "b"]
    (tmp_path / "empty").mkdir()
    assert script(tmp_path, 'step touch "$work/x"', str(tmp_path / "empty")).returncode == 0
    assert sorted(p.name for p in (tmp_path / "empty").iterdir()) == [".nmtkit-recipe", "x"]
