"""nmtkit train end to end, and its option errors."""
import json

import torch
import yaml

from nmtkit.cli.train import ALL_OPTIONS  # noqa: F401  (re-exported for the trainer tests)
from nmtkit.search.attention_file import AttentionFile
from nmtkit.train.checkpoint import load_checkpoint
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
    assert "new: decoder.output.weight, decoder.readout.bias, decoder.readout.weight" in r.stderr
    assert "learning rate 0.0003 from the config; the checkpoint had 0.005" in r.stderr
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "w2", *TINY_MODEL, "--max-steps", 2,
             "--valid-every", 2, "--init-from", trained_ckpt, "--init-lr", "--init-optimizer"])
    assert "learning rate 0.005 from the checkpoint" in r.stderr and "0 new" in r.stderr


def test_target_attention_models_warm_start_from_rnnsearch(corpus_dir, trained_ckpt, tmp_path):
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "t", *TINY_MODEL, "--arch", "bitatt-rnn",
             "--reverse-context", "reference", "--max-steps", 2, "--valid-every", 2, "--init-from", trained_ckpt])
    new = r.stderr.split(" new: ")[1].split("\n")[0].replace("\n", "")
    assert "decoder.target_attention.v.weight" in new and "decoder.extra_gates.weight" in new
    assert "reverse.hidden_proj.weight" in new and "decoder.hidden_proj.weight" not in new
    zeroed = r.stderr.split("what the checkpoint did: ")[1].split("\n")[0]
    assert "decoder.extra_gates.weight" in zeroed and "decoder.target_gates.weight" in zeroed
    ckpt = load_checkpoint(tmp_path / "t" / "last.pt")
    before = load_checkpoint(trained_ckpt)["model"]
    assert ckpt["config"]["arch"] == "bitatt-rnn" and ckpt["config"]["reverse_context"] == "reference" and before["encoder.rnn.weight_hh_l0"].shape == \
        ckpt["model"]["encoder.rnn.weight_hh_l0"].shape


def test_freeze_embeddings(corpus_dir, trained_ckpt, tmp_path):
    run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "f", *TINY_MODEL, "--max-steps", 3,
         "--valid-every", 3, "--init-from", trained_ckpt, "--freeze-embeddings"])
    before, after = load_checkpoint(trained_ckpt)["model"], load_checkpoint(tmp_path / "f" / "last.pt")["model"]
    assert (before["src_emb.weight"] == after["src_emb.weight"]).all()
    assert not (before["decoder.attention.v.weight"] == after["decoder.attention.v.weight"]).all()


def test_option_errors(corpus_dir, tmp_path):
    (tmp_path / "bad.yaml").write_text("data: x\nlearning_rate: 0.1\n")
    r = run(["train", "-c", tmp_path / "bad.yaml"], ok=False)
    assert "bad.yaml: unknown key(s) learning_rate" in r.stderr and r.exit_code == 2
    r = run(["train", "--data", corpus_dir, "--lr", "fast"], ok=False)
    assert "'fast' is not a valid float" in r.stderr
    r = run(["train", "--save-dir", tmp_path / "x"], ok=False)
    assert "--data: a corpus folder is required" in r.stderr
    r = run(["train", "--data", tmp_path, "--save-dir", tmp_path / "x"], ok=False)
    assert "not a corpus folder" in r.stderr
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "x", "--resume"], ok=False)
    assert "--resume: no" in r.stderr
    r = run(["train", "--data", corpus_dir, "--init-lr"], ok=False)
    assert "go with --init-from" in r.stderr
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "x", "--arch", "nope"], ok=False)
    assert "invalid choice" in r.stderr or "unknown architecture" in r.stderr


def test_an_existing_run_is_not_overwritten(corpus_dir, trained_ckpt):
    r = run(["train", "--data", corpus_dir, "--save-dir", trained_ckpt.parent], ok=False)
    assert "already holds a run; use --resume" in r.stderr


def test_mixed_precision_trains_on_the_cpu(corpus_dir, tmp_path):
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "amp", *TINY_MODEL, "--amp", "--max-steps", 4,
             "--valid-every", 4, "--log-every", 2])
    assert "validation at step 4" in r.stderr
    assert load_checkpoint(tmp_path / "amp" / "last.pt")["model"]["decoder.output.weight"].dtype == torch.float32


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
