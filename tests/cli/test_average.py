from tests.conftest import TINY_MODEL, run


def test_a_run_keeps_its_last_checkpoints_and_average_makes_one_to_translate_with(corpus_dir, tmp_path):
    save = tmp_path / "run"
    run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--max-steps", 8, "--valid-every", 2,
         "--valid-max-sentences", 2, "--keep-checkpoints", 3])
    assert sorted(p.name for p in save.glob("step-*.pt")) == ["step-4.pt", "step-6.pt", "step-8.pt"]
    r = run(["average", "--run", save, "--last", 2, "-o", tmp_path / "avg.pt"])
    assert f"averaged 2 checkpoints ({save / 'step-6.pt'}, {save / 'step-8.pt'})" in r.stderr
    out = run(["translate", "-m", tmp_path / "avg.pt", "--greedy"], input="forty-two\n").stdout
    assert len(out.splitlines()) == 1
    r = run(["average", "-o", tmp_path / "x.pt"], ok=False)
    assert r.exit_code == 2 and "give CHECKPOINTS, or --run DIR [--last N]" in r.stderr
    r = run(["average", "--run", tmp_path, "-o", tmp_path / "x.pt"], ok=False)
    assert "no step-STEP.pt checkpoints" in r.stderr and not (tmp_path / "x.pt").exists()
    # (silent: three checkpoints averaged for --last 9; one model weighed double)
    r = run(["average", "--run", save, "--last", 4, "-o", tmp_path / "x.pt"])  # (one more than the run kept)
    assert f"warning: --last 4: the run in {save} kept 3 step checkpoint(s); averaging those" in r.stderr
    assert "averaged 3 checkpoints" in r.stderr
    (tmp_path / "x.pt").unlink()
    assert "warning" not in run(["average", "--run", save, "--last", 3, "-o", tmp_path / "x.pt"]).stderr
    (tmp_path / "x.pt").unlink()
    r = run(["average", save / "step-6.pt", save / "step-8.pt", save / ".." / "run" / "step-6.pt", "-o",
             tmp_path / "x.pt"], ok=False)
    assert r.exit_code == 2 and f"is {save / 'step-6.pt'} again; give each checkpoint once" in r.stderr
    assert not (tmp_path / "x.pt").exists()
    (tmp_path / "alias").symlink_to(save)  # (the same file through a link to its folder)
    r = run(["average", save / "step-6.pt", tmp_path / "alias" / "step-6.pt", "-o", tmp_path / "x.pt"], ok=False)
    assert r.exit_code == 2 and f"is {save / 'step-6.pt'} again" in r.stderr and not (tmp_path / "x.pt").exists()
    # an existing file is replaced only if it is an earlier average, or with --force
    best = (save / "best.pt").read_bytes()
    r = run(["average", "--run", save, "-o", save / "best.pt"], ok=False)
    assert r.exit_code == 2 and f"-o {save / 'best.pt'}: holds a file that is not an earlier average" in r.stderr
    assert (save / "best.pt").read_bytes() == best
    (tmp_path / "notes.txt").write_text("mine\n")
    r = run(["average", "--run", save, "-o", tmp_path / "notes.txt"], ok=False)
    assert r.exit_code == 2 and (tmp_path / "notes.txt").read_text() == "mine\n"
    earlier = (tmp_path / "avg.pt").read_bytes()
    run(["average", "--run", save, "--last", 3, "-o", tmp_path / "avg.pt"])  # (an earlier average: replaced)
    assert (tmp_path / "avg.pt").read_bytes() != earlier
    run(["average", "--run", save, "-o", save / "best.pt", "--force"])
    assert (save / "best.pt").read_bytes() != best
    step = (save / "step-6.pt").read_bytes()  # one of the checkpoints it averages: never its output, --force or not
    r = run(["average", "--run", save, "--last", 2, "-o", save / "step-6.pt", "--force"], ok=False)
    assert r.exit_code == 2 and r.stderr == (f"error: --output {save / 'step-6.pt'}: is the file of --run {save} "
                                             "(step-6.pt); write the output to another file\n")
    assert (save / "step-6.pt").read_bytes() == step


def test_an_average_or_a_step_checkpoint_warm_starts_a_run(corpus_dir, tmp_path):
    """(docs/average.md names train --init-from as a use of the average: it was "an incomplete nmtkit checkpoint (no
    schedule)"; what a decoding checkpoint lacks is refused only where asked for)"""
    save = tmp_path / "run"
    run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--max-steps", 4, "--valid-every", 2,
         "--valid-max-sentences", 2, "--keep-checkpoints", 2])
    run(["average", "--run", save, "-o", tmp_path / "avg.pt"])
    for start in (tmp_path / "avg.pt", save / "step-2.pt"):
        r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / start.stem, *TINY_MODEL, "--max-steps", 1,
                 "--valid-every", 1, "--valid-max-sentences", 2, "--init-from", start])
        assert f"warm start from {start} (rnnsearch)" in r.stderr
    for option, what in (("--init-lr", "learning rate"), ("--init-optimizer", "optimiser state")):
        r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "x", *TINY_MODEL, "--max-steps", 1,
                 "--init-from", tmp_path / "avg.pt", option], ok=False)
        assert r.exit_code == 2 and f"error: {option}: {tmp_path / 'avg.pt'} holds no {what}" in r.stderr
