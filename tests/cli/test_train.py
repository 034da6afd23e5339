"""nmtkit train end to end, and its option errors."""
import json

import pytest
import torch
import yaml

from nmtkit.checkpoint import load_checkpoint, save_checkpoint
from nmtkit.data.preprocess import VocabSpec, preprocess
from nmtkit.search.attention_file import AttentionFile
from tests.conftest import TINY_MODEL, run


def test_train_writes_checkpoints_config_and_log(corpus_dir, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"data": str(corpus_dir), "model": {"emb_size": 16, "dec_size": 32},
                                   "max_steps": 20, "valid_every": 10, "batch_size": 16}))
    r = run(["train", "-c", cfg, "--save-dir", tmp_path / "ck", "--enc-size", 24, "--batch-size", 8])
    assert "validation at step 20" in r.stderr
    saved = yaml.safe_load((tmp_path / "ck" / "config.yaml").read_text())
    assert saved["emb_size"] == 16 and saved["enc_size"] == 24 and saved["batch_size"] == 8  # CLI over YAML
    ckpt = load_checkpoint(tmp_path / "ck" / "last.pt")
    assert ckpt["progress"]["step"] == 20 and ckpt["config"]["dec_size"] == 32
    assert ckpt["vocab"]["src"]["kind"] == "word"
    lines = [json.loads(l) for l in (tmp_path / "ck" / "train.jsonl").read_text().splitlines()]
    assert [l["step"] for l in lines if l["type"] == "valid"] == [10, 20]


def test_warm_start_lists_new_parameters_and_keeps_the_configured_lr(corpus_dir, trained_ckpt, tmp_path):
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "w", *TINY_MODEL, "--readout-size", 16,
             "--max-steps", 2, "--valid-every", 2, "--lr", 0.0003, "--init-from", trained_ckpt])
    assert "new: decoder.readout.base.bias, decoder.readout.base.weight, decoder.readout.output.weight" in r.stderr
    assert "learning rate 0.0003 from the config; the checkpoint had 0.005" in r.stderr
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "w2", *TINY_MODEL, "--max-steps", 2,
             "--valid-every", 2, "--init-from", trained_ckpt, "--init-lr", "--init-optimizer"])
    assert "learning rate 0.005 from the checkpoint" in r.stderr and "0 new" in r.stderr
    assert "vocabulary" not in r.stderr
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "w3", "--arch", "transformer", "--d-model", 16,
             "--ffn-size", 32, "--heads", 2, "--enc-layers", 1, "--dec-layers", 1, "--max-steps", 1, "--init-from",
             trained_ckpt], ok=False)
    assert r.exit_code == 2 and r.stderr.endswith(f"error: --init-from {trained_ckpt}: none of its parameters fits this "
                                                  "transformer model (a rnnsearch model of other names or shapes); "
                                                  "nothing to start from\n")
    assert not (tmp_path / "w3" / "last.pt").exists()
    (tmp_path / "text.pt").write_text("forty-two\n")
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "w4", *TINY_MODEL, "--init-from",
             tmp_path / "text.pt"], ok=False)
    assert r.stderr.endswith("text.pt: not a readable nmtkit checkpoint (it is not a file PyTorch saved: text, or "
                             "another format)\n")


def test_warm_start_on_a_corpus_of_other_vocabularies_warns(corpus_dir, text_dir, trained_ckpt, tmp_path):
    """(a vocabulary of other words was loaded silently: every embedding row then stood for another word)"""
    run(["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
         "--vocab", "word:60", "-o", tmp_path / "other"])
    r = run(["train", "--data", tmp_path / "other", "--save-dir", tmp_path / "w", *TINY_MODEL, "--max-steps", 1,
             "--valid-every", 1, "--valid-max-sentences", 2, "--init-from", trained_ckpt])
    warnings = [line for line in r.stderr.splitlines() if line.startswith("warning: --init-from")]
    assert warnings == [f"warning: --init-from {trained_ckpt}: its vocabulary of src is not this corpus': the "
                        "parameters over its words (embeddings, output layer) that fit in shape are loaded row by row, "
                        "each row now another word's; to keep their words, preprocess with the checkpoint's "
                        "vocabulary (--src-vocab)"]  # (the 35 German words of either corpus: the same vocabulary)


def test_target_attention_models_warm_start_from_rnnsearch(corpus_dir, trained_ckpt, tmp_path):
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "t", *TINY_MODEL, "--arch", "bitatt-rnn",
             "--reverse-context", "reference", "--max-steps", 2, "--valid-every", 2, "--init-from", trained_ckpt])
    new = r.stderr.split(" new: ")[1].split("\n")[0].replace("\n", "")
    assert "decoder.target_attention.v.weight" in new and "decoder.cell.inputs.extra.weight" in new
    assert "reverse.cell.hidden.weight" in new and "decoder.cell.hidden.weight" not in new
    zeroed = r.stderr.split("what the checkpoint did: ")[1].split("\n")[0]
    assert "decoder.cell.inputs.extra.weight" in zeroed and "decoder.cell.contexts.target.weight" in zeroed
    ckpt = load_checkpoint(tmp_path / "t" / "last.pt")
    before = load_checkpoint(trained_ckpt)["model"]
    assert ckpt["config"]["arch"] == "bitatt-rnn" and ckpt["config"]["reverse_context"] == "reference" and before["encoder.rnn.weight_hh_l0"].shape == \
        ckpt["model"]["encoder.rnn.weight_hh_l0"].shape


def test_freeze_embeddings(corpus_dir, trained_ckpt, tmp_path):
    run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "f", *TINY_MODEL, "--max-steps", 3,
         "--valid-every", 3, "--init-from", trained_ckpt, "--freeze-embeddings"])
    before, after = load_checkpoint(trained_ckpt)["model"], load_checkpoint(tmp_path / "f" / "last.pt")["model"]
    assert (before["encoder.embedding.weight"] == after["encoder.embedding.weight"]).all()
    assert not (before["decoder.attention.v.weight"] == after["decoder.attention.v.weight"]).all()
    run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "f", "--resume", "--max-steps", 5])  # (kept)
    resumed = load_checkpoint(tmp_path / "f" / "last.pt")["model"]
    assert (before["encoder.embedding.weight"] == resumed["encoder.embedding.weight"]).all()


def test_option_errors(corpus_dir, tmp_path):
    (tmp_path / "bad.yaml").write_text("data: x\nlearning_rate: 0.1\n")
    r = run(["train", "-c", tmp_path / "bad.yaml"], ok=False)
    assert "bad.yaml: unknown key(s) learning_rate (line 2): no such option" in r.stderr and r.exit_code == 2
    (tmp_path / "bad.yaml").write_text("data: x\nresume: true\nheads: 2\ninit-lr: true\nrate: 1\n")
    r = run(["train", "-c", tmp_path / "bad.yaml"], ok=False)
    assert r.stderr == (f"error: {tmp_path / 'bad.yaml'}: unknown key(s) resume (line 2), heads (line 3), init_lr "
                        "(line 4), rate (line 5): --resume, --init-lr: given on the command line only, not in a config "
                        "file; heads: not an option of --arch rnnsearch but of bitatt-transformer, "
                        "multi-source-transformer, transformer; see 'nmtkit train --arch rnnsearch --help'; rate: no "
                        "such option; see 'nmtkit train --help'\n") and r.exit_code == 2
    (tmp_path / "bad.yaml").write_text("data: x\nresume: true\n")  # (a reason alone names the flag too)
    r = run(["train", "-c", tmp_path / "bad.yaml"], ok=False)
    assert r.stderr == (f"error: {tmp_path / 'bad.yaml'}: unknown key(s) resume (line 2): --resume: given on the "
                        "command line only, not in a config file\n") and r.exit_code == 2
    r = run(["train", "--data", corpus_dir, "--lr", "fast"], ok=False)
    assert "--lr: expects a number > 0, got 'fast'" in r.stderr
    r = run(["train", "--save-dir", tmp_path / "x"], ok=False)
    assert r.exit_code == 2 and "--data: a corpus folder is required" in r.stderr
    luong = ["--arch", "luong", "--layers", 1]
    for options, message in ((["--warmup-steps", 10], "--warmup-steps: goes with --lr-schedule inverse-sqrt"),
                             ([*luong, "--attention-window", 3], "--attention-window: goes with --attention local-m or "
                                                                 "local-p"),
                             ([*luong, "--location-max-len", 30], "--location-max-len: goes with --global-attention "
                                                                  "location"),
                             (["--lr-schedule", "inverse-sqrt", "--min-lr", 0.1], "--min-lr: goes with --lr-schedule "
                                                                                  "decay-on-worse"),
                             (["--optimizer", "sgd", "--adam-beta2", 0.98], "--adam-beta2: goes with --optimizer adam"),
                             (["--optimizer", "adadelta", "--adam-beta1", 0.8], "--adam-beta1: goes with --optimizer "
                                                                                "adam"),
                             (["--arch", "multi-source", "--no-feature-norm"], "--no-feature-norm: goes with image "
                                                                               "features among --encoders"),
                             (["--arch", "multi-source-transformer", "--encoder-dropout", 0.2], "--encoder-dropout: goes "
                                                                                             "with two or more --encoders"),
                             (["--arch", "multi-source", "--balance-encoders"], "--balance-encoders: goes with two or "
                                                                                "more --encoders, or --sentinel")):
        r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "y", "--max-steps", 1, *options], ok=False)
        assert r.exit_code == 2 and r.stderr == f"error: {message}\n" and not (tmp_path / "y").exists()
    for text, key, goes_with in (  # (the same keys in a config file, at another value than their default: ignored)
            ("warmup_steps: 100\n", "warmup_steps", "--lr-schedule inverse-sqrt"),
            ("optimizer: sgd\nadam_beta1: 0.8\n", "adam_beta1", "--optimizer adam"),
            ("arch: luong\nlayers: 1\nattention_window: 3\n", "attention_window", "--attention local-m or local-p")):
        (tmp_path / "unused.yaml").write_text("max_steps: 1\n" + text)
        r = run(["train", "-c", tmp_path / "unused.yaml", "--data", corpus_dir, "--save-dir", tmp_path / "y"], ok=False)
        line = 1 + text.count("\n")
        assert r.exit_code == 2 and r.stderr == f"error: {tmp_path / 'unused.yaml'}:{line}: '{key}' goes with {goes_with}\n"
    (tmp_path / "defaults.yaml").write_text("max_steps: 1\nwarmup_steps: 4000\nadam_beta1: 0.9\n")  # (as config.yaml)
    run(["train", "-c", tmp_path / "defaults.yaml", "--data", corpus_dir, "--save-dir", tmp_path / "y", *TINY_MODEL,
         "--valid-every", 1, "--valid-max-sentences", 2])
    r = run(["train", "--data", tmp_path, "--save-dir", tmp_path / "x"], ok=False)
    assert "not a corpus folder" in r.stderr
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "x", "--resume"], ok=False)
    assert "--resume: no" in r.stderr
    for alone in ("--init-lr", "--init-optimizer"):
        r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "y", "--max-steps", 1, alone], ok=False)
        assert r.exit_code == 2 and "go with --init-from" in r.stderr
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "x", "--arch", "nope"], ok=False)
    assert "invalid choice" in r.stderr or "unknown architecture" in r.stderr


def test_a_length_limit_that_leaves_no_example_is_an_error(tmp_path):
    """Not a run going round empty epochs for ever."""
    for side, words in (("en", "one two three"), ("de", "eins zwei drei")):
        for split in ("train", "valid", "test"):
            (tmp_path / f"{split}.{side}").write_text(f"{words}\n" * 30)
    data = preprocess(tmp_path / "data", "en", "de", *(tmp_path / s for s in ("train", "valid", "test")),
                      VocabSpec("word", 20))
    r = run(["train", "--data", data, "--save-dir", tmp_path / "ck", *TINY_MODEL, "--max-steps", 5, "--max-len", 2],
            ok=False)
    assert r.exit_code == 2 and r.stderr.endswith("error: --max-len 2: every one of the corpus's 30 training examples "
                                                  "is longer, so no batch is left to train on\n")


def test_options_of_another_architecture_are_one_line_errors(corpus_dir, tmp_path):
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "x", "--layers", 3], ok=False)
    assert r.exit_code == 2 and r.stderr.strip().count("\n") == 0
    assert "--layers: not an option of --arch rnnsearch but of luong" in r.stderr
    r = run(["train", "--data", corpus_dir, "--arch", "luong", "--decoder-cell", "lstm"], ok=False)
    assert "--decoder-cell: not an option of --arch luong but of bitatt-rnn, ftatt-rnn" in r.stderr
    r = run(["train", "--data", corpus_dir, "--no-input-feed"], ok=False)
    assert "--no-input-feed: not an option of --arch rnnsearch but of luong" in r.stderr
    r = run(["train", "--data", corpus_dir, "--nonsense", 1], ok=False)
    assert "--nonsense: no such option; see 'nmtkit train --help'" in r.stderr
    (tmp_path / "l.yaml").write_text("arch: rnnsearch\nlayers: 4\nattention: local-m\n")
    r = run(["train", "--data", corpus_dir, "-c", tmp_path / "l.yaml"], ok=False)
    assert ("l.yaml: unknown key(s) layers (line 2), attention (line 3): not an option of --arch rnnsearch but of "
            "luong") in r.stderr
    r = run(["train", "--data", corpus_dir, "--arch", "transformer-xl"], ok=False)
    assert "--arch: unknown architecture 'transformer-xl'" in r.stderr
    for text, message in (("batch_size: {}\n", "'batch_size' expects an integer >= 1, got {}"),
                          ("dropout: {dropout: 0.3}\n", "'dropout' expects a number in [0, 1), got {'dropout': 0.3}"),
                          ("arch: ~\n", "'arch' expects an architecture, got None; known: "),
                          ("arch: transformer-xl\n", "'arch' expects an architecture, got 'transformer-xl'; known: ")):
        (tmp_path / "m.yaml").write_text(text)
        r = run(["train", "--data", corpus_dir, "-c", tmp_path / "m.yaml", "--save-dir", tmp_path / "m", "--max-steps",
                 1, "--valid-every", 1, "--valid-max-sentences", 2], ok=False)
        assert r.exit_code == 2 and r.stderr.startswith(f"error: {tmp_path / 'm.yaml'}:1: {message}"), r.stderr


def test_the_arch_of_a_config_file_or_of_the_resumed_run_decides_the_options(corpus_dir, tmp_path):
    (tmp_path / "l.yaml").write_text(f"arch: luong\ndata: {corpus_dir}\nlayers: 1\n")
    run(["train", "-c", tmp_path / "l.yaml", "--save-dir", tmp_path / "l", "--emb-size", 8, "--enc-size", 8,
         "--dec-size", 8, "--attention", "local-m", "--max-steps", 2, "--valid-every", 2, "--valid-max-sentences", 4])
    saved = yaml.safe_load((tmp_path / "l" / "config.yaml").read_text())
    assert saved["arch"] == "luong" and saved["attention"] == "local-m" and saved["layers"] == 1
    assert "decoder_cell" not in saved and "reverse_context" not in saved  # only luong's keys, and training's
    r = run(["train", "--save-dir", tmp_path / "l", "--resume", "--max-steps", 3, "--dropout", 0.3])  # (training's)
    assert "resuming from" in r.stderr
    assert yaml.safe_load((tmp_path / "l" / "config.yaml").read_text())["dropout"] == 0.3
    r = run(["train", "--save-dir", tmp_path / "l", "--resume", "--max-steps", 4, "--attention-window", 5], ok=False)
    assert r.exit_code == 2 and "--resume: --attention-window 5: the run in" in r.stderr  # (the model's: as built)
    (tmp_path / "l" / "config.yaml").unlink()  # (lost: a plain --resume took the default architecture and options)
    r = run(["train", "--save-dir", tmp_path / "l", "--resume", "--max-steps", 4])
    assert f"warning: {tmp_path / 'l' / 'config.yaml'} is missing: the run's settings taken from" in r.stderr
    saved = yaml.safe_load((tmp_path / "l" / "config.yaml").read_text())
    assert (saved["arch"], saved["layers"], saved["dropout"], saved["valid_max_sentences"]) == ("luong", 1, 0.3, 4)
    del saved["dropout"]  # (a key lost: the others, arch among them, are still there)
    (tmp_path / "l" / "config.yaml").write_text(yaml.safe_dump(saved))
    r = run(["train", "--save-dir", tmp_path / "l", "--resume", "--max-steps", 5])
    assert f"warning: {tmp_path / 'l' / 'config.yaml'} lacks dropout: the run's settings taken from" in r.stderr
    assert yaml.safe_load((tmp_path / "l" / "config.yaml").read_text())["dropout"] == 0.3
    assert "Options of --arch luong" in run(["train", "-c", tmp_path / "l.yaml", "--help"]).stdout


def test_an_existing_run_is_not_overwritten(corpus_dir, trained_ckpt):
    r = run(["train", "--data", corpus_dir, "--save-dir", trained_ckpt.parent], ok=False)
    assert r.exit_code == 2 and "already holds a run; use --resume" in r.stderr
    r = run(["train", "--data", corpus_dir, "--save-dir", trained_ckpt.parent, "--resume", "--init-from", trained_ckpt],
            ok=False)
    assert r.exit_code == 2 and r.stderr == "error: --resume and --init-from exclude each other\n"
    r = run(["train", "--data", corpus_dir, "--save-dir", "/proc/nmtkit-test/run"], ok=False)
    assert r.exit_code == 2 and r.stderr.startswith("error: --save-dir /proc/nmtkit-test/run: cannot write in /proc (")


def test_a_new_run_leaves_another_runs_checkpoints_and_the_users_config_alone(corpus_dir, trained_ckpt, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("best.pt", "step-5.pt"):
        (folder / name).write_bytes(trained_ckpt.read_bytes())
        r = run(["train", "--data", corpus_dir, "--save-dir", folder, *TINY_MODEL, "--max-steps", 1], ok=False)
        assert r.exit_code == 2 and r.stderr.strip() == (f"error: --save-dir {folder}: holds {name} of a run without "
                                                         "last.pt to resume; remove them or choose another folder")
        assert (folder / name).read_bytes() == trained_ckpt.read_bytes()
        (folder / name).unlink()
    mine = f"# my settings\ndata: {corpus_dir}\nmax_steps: 1\n"
    (folder / "config.yaml").write_text(mine)
    r = run(["train", "-c", folder / "config.yaml", "--save-dir", folder, *TINY_MODEL], ok=False)
    assert r.exit_code == 2 and "holds the --config file, which train would replace" in r.stderr
    assert (folder / "config.yaml").read_text() == mine and not (folder / "last.pt").exists()


def test_a_complete_config_of_the_users_in_the_new_runs_folder_is_left_alone(corpus_dir, trained_ckpt, tmp_path):
    """(an earlier run's config.yaml copied and edited, given as -c; or a link to settings kept elsewhere: each was
    rewritten with the run's settings, comments lost, the linked file outside the folder too)"""
    earlier = "# from an earlier run\n" + (trained_ckpt.parent / "config.yaml").read_text()
    folder, shared = tmp_path / "run", tmp_path / "settings.yaml"
    folder.mkdir()
    (folder / "config.yaml").write_text(earlier)
    r = run(["train", "-c", folder / "config.yaml", "--data", corpus_dir, "--save-dir", folder, "--max-steps", 1],
            ok=False)
    assert r.exit_code == 2 and r.stderr.strip() == (f"error: --save-dir {folder}: holds the --config file, which "
                                                     "train would replace with the run's own; keep it in another "
                                                     "folder or choose another --save-dir")
    (folder / "config.yaml").unlink()
    shared.write_text(earlier)
    (folder / "config.yaml").symlink_to(shared)
    r = run(["train", "--data", corpus_dir, "--save-dir", folder, *TINY_MODEL, "--max-steps", 1], ok=False)
    assert r.exit_code == 2 and "holds a link config.yaml, which train would replace" in r.stderr
    assert shared.read_text() == earlier and not (folder / "last.pt").exists()


def test_a_run_stopped_before_its_first_checkpoint_can_be_started_again(corpus_dir, tmp_path):
    args = ["train", "--data", corpus_dir, "--save-dir", tmp_path / "r", *TINY_MODEL, "--valid-every", 1,
            "--valid-max-sentences", 2]
    run([*args, "--max-steps", 1])
    (tmp_path / "r" / "last.pt").unlink()  # (as if killed before saving: its config.yaml and train.jsonl are left)
    (tmp_path / "r" / "best.pt").unlink()
    run([*args, "--max-steps", 1])
    assert (tmp_path / "r" / "last.pt").exists()


def test_a_diverging_run_stops_without_saving_parameters_that_are_not_finite(corpus_dir, tmp_path):
    save = tmp_path / "d"
    r = run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--optimizer", "sgd", "--lr", "1e30",
             "--clip-norm", 0, "--max-steps", 4, "--valid-every", 1, "--valid-max-sentences", 2], ok=False)
    assert r.exit_code == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: training diverged: the loss of update ") and "stopped without saving" in last
    saved = torch.load(save / "last.pt", weights_only=False)
    assert all(bool(v.isfinite().all()) for v in saved["model"].values() if v.is_floating_point())
    assert saved["progress"]["step"] < int(last.split("update ")[1].split()[0])


def test_mixed_precision_trains_on_the_cpu(corpus_dir, tmp_path):
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "amp", *TINY_MODEL, "--amp", "--max-steps", 4,
             "--valid-every", 4, "--log-every", 2])
    assert "validation at step 4" in r.stderr
    assert load_checkpoint(tmp_path / "amp" / "last.pt")["model"]["decoder.readout.output.weight"].dtype == torch.float32


def test_luong_local_p_trains_and_translates_with_attention(corpus_dir, tmp_path):
    save = tmp_path / "luong"
    run(["train", "--data", corpus_dir, "--save-dir", save, "--arch", "luong", "--emb-size", 16, "--enc-size", 16,
         "--dec-size", 24, "--layers", 2, "--attention", "local-p", "--attention-window", 2, "--dropout", 0.0,
         "--max-steps", 30, "--valid-every", 30, "--batch-size", 32, "--lr", 0.005])
    assert load_checkpoint(save / "last.pt")["config"]["attention"] == "local-p"
    r = run(["translate", "-m", save / "last.pt", "--beam", 3, "--attention-out", tmp_path / "a.h5"],
            input="forty-two\n\nseven hundred one\n")
    assert len(r.stdout.split("\n")) == 4 and r.stdout.split("\n")[1] == ""
    with AttentionFile(tmp_path / "a.h5") as f:
        weights = torch.as_tensor(f[2]["attention"]["source"])
        # local-p: the window's softmax times the Gaussian (Eq. 10), so each row sums to at most 1
        assert weights.shape[1] == 4 and (weights >= 0).all() and (weights.sum(1) <= 1 + 1e-5).all()


def test_inverse_sqrt_schedule_warms_up_then_decays_and_resumes(corpus_dir, tmp_path):
    args = ["train", "--data", corpus_dir, "--save-dir", tmp_path / "w", *TINY_MODEL, "--lr-schedule", "inverse-sqrt",
            "--warmup-steps", 4, "--lr", 0.004, "--log-every", 1, "--valid-every", 3, "--valid-max-sentences", 4]
    run([*args, "--max-steps", 6])
    run(["train", "--save-dir", tmp_path / "w", "--data", corpus_dir, "--resume", "--max-steps", 9])
    logged = {}
    for line in (tmp_path / "w" / "train.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["type"] == "train":
            logged[record["step"]] = record["lr"]  # the rate of the next update
    expected = {t: 0.004 * min((t + 1) / 4, (4 / (t + 1)) ** 0.5) for t in range(1, 10)}
    assert logged == {t: pytest.approx(v) for t, v in expected.items()}
    files = {name: (tmp_path / "w" / name).read_bytes() for name in ("config.yaml", "train.jsonl", "last.pt")}
    r = run(["train", "--save-dir", tmp_path / "w", "--resume", "--lr", 0.5, "--seed", 7])  # (its limit reached)
    assert "nothing to do: 9 updates done already" in r.stderr
    assert {name: (tmp_path / "w" / name).read_bytes() for name in files} == files  # (the options not kept)


def test_a_single_source_model_trains_on_a_corpus_with_more_streams(tmp_path):
    """rnnsearch reads the src stream of an APE-style corpus (src, mt -> pe) and ignores mt."""
    from nmtkit.data.numbers import write_demo_corpus

    text = write_demo_corpus(tmp_path / "t", train=200, valid=10, test=5)
    for split in ("train", "valid"):
        (text / f"{split}.mt").write_text((text / f"{split}.de").read_text())
    run(["preprocess", "--train", text / "train", "--valid", text / "valid", "--src", "en", "--src", "mt",
         "--tgt", "de", "--vocab", "word:300", "-o", tmp_path / "c"])
    r = run(["train", "--data", tmp_path / "c", "--save-dir", tmp_path / "m", *TINY_MODEL, "--max-steps", 2,
             "--valid-every", 2])
    assert "validation at step 2" in r.stderr
    assert load_checkpoint(tmp_path / "m" / "last.pt")["corpus"]["mt"]["kind"] == "tokens"
    assert run(["translate", "-m", tmp_path / "m" / "last.pt"], input="forty-two\n").stdout.count("\n") == 1


def test_resume_in_the_default_folder_keeps_the_run_architecture(corpus_dir, tmp_path, monkeypatch):
    """``--resume`` without --save-dir or --arch: the run in ./checkpoints decides the architecture."""
    monkeypatch.chdir(tmp_path)
    run(["train", "--data", corpus_dir, "--arch", "luong", "--layers", 1, "--emb-size", 8, "--enc-size", 8,
         "--dec-size", 8, "--max-steps", 2, "--valid-every", 2, "--valid-max-sentences", 4])
    r = run(["train", "--resume", "--max-steps", 3])
    assert "resuming from checkpoints/last.pt: step 2" in r.stderr
    assert load_checkpoint(tmp_path / "checkpoints" / "last.pt")["progress"]["step"] == 3


def test_resume_of_a_run_saved_with_every_architecture_keys(corpus_dir, tmp_path):
    """nmtkit 0.1.0 saved every architecture's options in config.yaml: other architectures' keys are dropped."""
    save = tmp_path / "r"
    run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--max-steps", 2, "--valid-every", 2,
         "--valid-max-sentences", 4])
    saved = yaml.safe_load((save / "config.yaml").read_text())
    (save / "config.yaml").write_text(yaml.safe_dump({**saved, "layers": 2, "input_feed": True}))
    r = run(["train", "--save-dir", save, "--resume", "--max-steps", 3])
    assert "resuming from" in r.stderr and "layers" not in yaml.safe_load((save / "config.yaml").read_text())


def test_init_lr_is_refused_by_a_schedule_that_sets_every_update(corpus_dir, trained_ckpt, tmp_path):
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "s", *TINY_MODEL, "--lr-schedule", "inverse-sqrt",
             "--init-from", trained_ckpt, "--init-lr"], ok=False)
    assert "--init-lr: the inverse-sqrt schedule sets the learning rate at every update" in r.stderr


def test_resume_with_another_model_option_names_it_shapes_or_not(corpus_dir, trained_ckpt, tmp_path):
    """(an option that changes no shape, --heads, was taken silently: the run went on as another model)"""
    save = tmp_path / "r"
    run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--max-steps", 1, "--valid-every", 1,
         "--valid-max-sentences", 2])
    r = run(["train", "--data", corpus_dir, "--save-dir", save, "--resume", "--dec-size", 40, "--max-steps", 2], ok=False)
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and r.stderr.endswith(errors[0] + "\n") and r.exit_code == 2
    assert errors[0] == (f"error: --resume: --dec-size 40: the run in {save} built its model with --dec-size 48; "
                         f"resume without it, here or in its config.yaml (or start a new run, --init-from {save / 'last.pt'})")
    transformer = ["--arch", "transformer", "--d-model", 16, "--ffn-size", 32, "--heads", 2, "--enc-layers", 1,
                   "--dec-layers", 1]
    run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "t", *transformer, "--max-steps", 1, "--valid-every",
         1, "--valid-max-sentences", 2])
    before = (tmp_path / "t" / "last.pt").read_bytes()
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "t", "--resume", "--heads", 4, "--max-steps", 2],
            ok=False)
    assert r.exit_code == 2 and "--resume: --heads 4: the run in" in r.stderr and "with --heads 2" in r.stderr
    assert (tmp_path / "t" / "last.pt").read_bytes() == before


@pytest.mark.parametrize("option, value, run_value, why", [
    ("--optimizer", "adadelta", "adam", "whose state (moments, step counts) last.pt holds"),
    ("--optimizer", "sgd", "adam", "whose state (moments, step counts) last.pt holds"),
    ("--decay-metric", "ppl", "bleu", "by which its best validation so far and --patience's count were judged"),
    ("--valid-tokenize", "zh", "13a", "by which its validation BLEU so far was computed")])
def test_resume_with_another_optimizer_or_decay_metric_is_refused(corpus_dir, tmp_path, option, value, run_value, why):
    """(adadelta given Adam's state crashed at the first update, sgd took it silently; a BLEU run resumed with
    --decay-metric ppl read its best BLEU as a perplexity, so that no validation was a new best again)"""
    save = tmp_path / "r"
    run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--max-steps", 1, "--valid-every", 1,
         "--valid-max-sentences", 2])
    before = (save / "last.pt").read_bytes()
    r = run(["train", "--data", corpus_dir, "--save-dir", save, "--resume", option, value, "--max-steps", 2], ok=False)
    assert r.exit_code == 2 and r.stderr.strip().splitlines()[-1] == (
        f"error: --resume: {option} {value}: the run in {save} trained with {option} {run_value}, {why}; resume "
        f"without it, here or in its config.yaml (or start a new run, --init-from {save / 'last.pt'})")
    assert (save / "last.pt").read_bytes() == before


def test_resume_on_another_corpus_names_the_vocabulary(corpus_dir, text_dir, tmp_path):
    save = tmp_path / "r"
    run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--max-steps", 1, "--valid-every", 1,
         "--valid-max-sentences", 2])
    run(["preprocess", "--train", text_dir / "train", "--valid", text_dir / "valid", "--src", "en", "--tgt", "de",
         "--vocab", "word:60", "-o", tmp_path / "other"])
    before = (save / "last.pt").read_bytes()
    r = run(["train", "--data", tmp_path / "other", "--save-dir", save, "--resume", "--max-steps", 2], ok=False)
    assert r.exit_code == 2 and r.stderr.endswith(f"error: --resume: --data {tmp_path / 'other'}: the vocabulary of src "
                                                  f"is not the one the run in {save} trained with; resume on the run's "
                                                  "corpus (or start a new run with --init-from)\n")
    assert (save / "last.pt").read_bytes() == before


def test_resume_removes_temporary_checkpoints_of_a_killed_run(corpus_dir, tmp_path):
    save = tmp_path / "k"
    args = ["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--valid-every", 1, "--valid-max-sentences", 2]
    run([*args, "--max-steps", 1])
    (save / ".last.pt.abc123.tmp").write_bytes(b"half a checkpoint")  # what kill -9 during a save leaves
    r = run([*args, "--resume", "--max-steps", 2])
    assert "removed 1 temporary checkpoint file(s) of the killed run" in r.stderr
    assert not list(save.glob("*.tmp")) and not list(save.glob(".*.tmp"))


def test_a_run_stopped_before_its_best_checkpoint_was_written_writes_it_at_resume(corpus_dir, tmp_path):
    """last.pt is saved first: a stop before best.pt leaves a run to resume (best.pt first left one without last.pt,
    which train refuses), and the resume writes best.pt from it, missing or an earlier best's."""
    save = tmp_path / "b"
    args = ["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--valid-every", 2, "--valid-max-sentences",
            2, "--max-steps", 2]
    run(args)  # (one validation: a new best)
    assert load_checkpoint(save / "last.pt")["stopping"]["best_step"] == 2
    (save / "best.pt").unlink()  # as a stop between the two saves leaves it
    r = run([*args, "--resume"])
    assert f"wrote {save / 'best.pt'}: the run stopped before it at its best validation (step 2)" in r.stderr
    assert load_checkpoint(save / "best.pt")["progress"]["step"] == 2
    earlier = load_checkpoint(save / "best.pt")
    earlier["progress"]["step"] = 1  # (an earlier best's, as a stop at a later new best leaves it)
    save_checkpoint(save / "best.pt", earlier)
    assert "wrote" in run([*args, "--resume"]).stderr and load_checkpoint(save / "best.pt")["progress"]["step"] == 2
    assert "wrote" not in run([*args, "--resume"]).stderr  # (in place: left as it is)


def test_resume_mid_epoch_with_another_batch_order_warns(corpus_dir, tmp_path):
    args = ["train", "--data", corpus_dir, "--save-dir", tmp_path / "r", *TINY_MODEL, "--valid-every", 100,
            "--valid-max-sentences", 2, "--batch-size", 16]
    run([*args, "--max-steps", 3])
    assert "--resume" not in run([*args, "--resume", "--max-steps", 4]).stderr  # the same order: no warning
    r = run([*args[:-1], "8", "--seed", "2", "--resume", "--max-steps", 5])
    assert ("warning: --resume: --batch-size 8 (the run had 16), --seed 2 (the run had 1): epoch 1 goes on in a new "
            "batch order, its first 4 batches skipped, so some of its examples come twice and others not at all; the "
            "next epochs are whole") in " ".join(r.stderr.split())
    from nmtkit.checkpoint import load_checkpoint, save_checkpoint

    last = load_checkpoint(tmp_path / "r" / "last.pt")
    assert last["processes"] == 1
    save_checkpoint(tmp_path / "r" / "last.pt", {**last, "processes": 2})  # (as if two processes had trained it)
    r = run([*args[:-1], "8", "--seed", "2", "--resume", "--max-steps", 6])
    assert ("warning: --resume: 1 process(es) (the run had 2): epoch 1 goes on in a new batch order, its first 5 "
            "batches skipped") in " ".join(r.stderr.split())


def test_a_transformer_trains_resumes_and_translates(corpus_dir, tmp_path):
    """The Transformer through the same trainer and search: inverse-sqrt warm-up, label smoothing, token batches."""
    save = tmp_path / "t"
    tiny = ["--arch", "transformer", "--d-model", 32, "--ffn-size", 64, "--heads", 4, "--enc-layers", 2,
            "--dec-layers", 2, "--lr-schedule", "inverse-sqrt", "--warmup-steps", 20, "--lr", 0.002,
            "--label-smoothing", 0.1, "--batch-type", "tokens", "--batch-size", 400, "--valid-max-sentences", 4]
    run(["train", "--data", corpus_dir, "--save-dir", save, *tiny, "--max-steps", 20, "--valid-every", 20])
    r = run(["train", "--data", corpus_dir, "--save-dir", save, "--resume", "--max-steps", 30, "--valid-every", 10])
    last = json.loads((save / "train.jsonl").read_text().splitlines()[-1])
    assert "resuming from" in r.stderr and last["type"] == "valid" and last["step"] == 30
    r = run(["translate", "-m", save / "last.pt", "--beam", 3, "--attention-out", tmp_path / "a.h5"],
            input="forty-two\n\nseven hundred one\n")
    assert len(r.stdout.split("\n")) == 4
    with AttentionFile(tmp_path / "a.h5") as f:
        w = f[2]["attention"]["source"]
        assert w.shape == (len(f[2]["tgt_tokens"]), 4) and abs(w.sum(-1) - 1).max() < 1e-5
    greedy = run(["translate", "-m", save / "last.pt", "--greedy"], input="forty-two\n").stdout
    assert greedy.strip()


def test_bitatt_transformer_warm_starts_from_a_transformer_and_decodes_in_two_passes(corpus_dir, tmp_path):
    tiny = ["--d-model", 32, "--ffn-size", 64, "--heads", 4, "--enc-layers", 1, "--dec-layers", 1,
            "--batch-size", 32, "--valid-max-sentences", 4]
    run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "t", "--arch", "transformer", *tiny,
         "--max-steps", 10, "--valid-every", 10])
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "bi", "--arch", "bitatt-transformer", *tiny,
             "--init-from", tmp_path / "t" / "last.pt", "--max-steps", 10, "--valid-every", 10])
    assert "reverse." in r.stderr  # the reverse decoder is new, listed by the warm start
    r = run(["translate", "-m", tmp_path / "bi" / "last.pt", "--beam", 3, "--attention-out", tmp_path / "a.h5"],
            input="forty-two\n\nseven hundred one\n")
    assert len(r.stdout.split("\n")) == 4
    with AttentionFile(tmp_path / "a.h5") as f:
        s = f[2]
        assert s["attention"]["source"].shape == (len(s["tgt_tokens"]), 4)
        assert s["labels"]["encoders"] == ["source", "reverse target"] and s["attention"]["encoders"].shape[1] == 2
    run(["plot-attn", tmp_path / "a.h5", "--index", 2, "--kind", "encoders", "-o", tmp_path / "enc.png"])
    assert (tmp_path / "enc.png").stat().st_size > 0


def test_chrf_plus_plus_is_validated_and_can_decide_the_best_checkpoint(corpus_dir, tmp_path):
    import json

    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "run", *TINY_MODEL, "--max-steps", 8,
             "--valid-every", 2, "--valid-max-sentences", 8, "--decay-metric", "chrf++", "--lr", 0.01])
    assert "| chrF++ " in r.stderr
    records = [json.loads(line) for line in (tmp_path / "run" / "train.jsonl").read_text().splitlines()]
    valid = [rec for rec in records if rec["type"] == "valid"]
    values = [rec["chrf++"] for rec in valid]
    assert len(valid) == 4 and [rec["best"] for rec in valid] == [v > max(values[:k], default=-1)
                                                                   for k, v in enumerate(values)]
    assert f"best chrf++ {max(values)}" in r.stderr


def test_validation_pairs_too_long_to_validate_whole_are_warned_of(corpus_dir, tmp_path, monkeypatch):
    from nmtkit.data.batching import example_lengths
    from nmtkit.data.shards import Corpus, Shard
    from nmtkit.train import trainer, validation

    for module in (trainer, validation):
        monkeypatch.setattr(module, "VALID_MAX_LEN", 4)
    over = sum(int((example_lengths(Shard(p)) - 1 > 4).sum()) for p in Corpus.open(corpus_dir).shard_paths("valid"))
    assert 0 < over < 40
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "r", *TINY_MODEL, "--max-steps", 1,
             "--valid-max-sentences", 2])
    assert (f"warning: --data {corpus_dir}: {over} validation pair(s) with a side of more than 4 tokens: left out of "
            "the validation perplexity, and only their first 4 input tokens translated") in r.stderr


def test_a_model_declaring_an_option_of_train_itself_is_refused(corpus_dir, tmp_path):
    """(a plugin's --max-steps replaced train's default, and train --help listed the flag twice)"""
    from nmtkit.config import POSITIVE, Option
    from nmtkit.models import register_model
    from nmtkit.models.registry import MODELS

    register_model("clash", [Option("max_steps", 7, "", allows=POSITIVE)])(lambda config, meta, vocabs: None)
    try:
        for args in (["--help"], ["--data", corpus_dir, "--save-dir", tmp_path / "r"]):
            r = run(["train", "--arch", "clash", *args], ok=False)
            assert r.exit_code == 2 and r.stderr.strip() == (
                "error: --arch clash: the model declares --max-steps, an option of train itself (tests.cli.test_train); "
                "give the model's option another name")
        assert not (tmp_path / "r").exists()
    finally:
        MODELS.pop("clash")
