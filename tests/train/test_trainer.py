"""The trainer learns, resumes exactly after a kill, and keeps DDP ranks in sync."""
import gc
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

import pytest
import torch

from nmtkit.config import resolve
from nmtkit.data.batching import examples_batch
from nmtkit.data.preprocess import VocabSpec, preprocess
from nmtkit.data.shards import Shard
from nmtkit.errors import NmtkitError
from nmtkit.models import get_spec
from nmtkit.train.distributed import DistInfo, init_distributed, shutdown
from nmtkit.train.options import TRAIN_OPTIONS
from nmtkit.train.trainer import Diverged, Trainer
from tests.conftest import TINY_MODEL, run

SIZES = {  # tiny models of each family
    "rnnsearch": dict(emb_size=32, enc_size=32, dec_size=64),
    "transformer": dict(d_model=32, ffn_size=64, heads=4, enc_layers=1, dec_layers=1),
}
SIZES["bitatt-transformer"] = SIZES["transformer"]


def config(arch="rnnsearch", **over):
    base = dict(arch=arch, **SIZES[arch], dropout=0.0, lr=0.005, batch_size=32, log_every=50, valid_every=100,
                threads=2)
    return resolve(TRAIN_OPTIONS + get_spec(arch).options, {}, {**base, **over})


def write_reverse_corpus(d, train: int = 3000, valid: int = 40):
    """A corpus in ``d/data`` of random letter sequences and their reversal."""
    g = random.Random(0)
    for split, n in (("train", train), ("valid", valid)):
        src = [[g.choice("abcdefghij") for _ in range(g.randrange(3, 9))] for _ in range(n)]
        (d / f"{split}.in").write_text("".join(" ".join(s) + "\n" for s in src))
        (d / f"{split}.out").write_text("".join(" ".join(reversed(s)) + "\n" for s in src))
    return preprocess(d / "data", "in", "out", d / "train", d / "valid", vocab=VocabSpec("word", 50))


@pytest.fixture(scope="module")
def reverse_corpus(tmp_path_factory):
    """Random letter sequences and their reversal."""
    return write_reverse_corpus(tmp_path_factory.mktemp("reverse"))


def test_a_tiny_model_learns_to_reverse(reverse_corpus, tmp_path):
    result = Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path), max_steps=400)).train()
    assert result["bleu"] > 80, result
    records = [json.loads(l) for l in (tmp_path / "train.jsonl").read_text().splitlines()]
    valid = [r for r in records if r["type"] == "valid"]
    assert [r["step"] for r in valid] == [100, 200, 300, 400]
    assert valid[-1]["ppl"] < valid[0]["ppl"]
    assert {"best.pt", "last.pt", "config.yaml", "train.jsonl"} <= {p.name for p in tmp_path.iterdir()}


def _losses(path):
    """Last logged loss of each step (a resumed run logs some steps twice)."""
    out = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r["type"] == "train":
            out[r["step"]] = r["loss"]
    return out


def _train_cmd(corpus, save_dir, *extra):
    return [sys.executable, "-m", "nmtkit", "train", "--data", str(corpus), "--save-dir", str(save_dir),
            "--emb-size", "32", "--enc-size", "32", "--dec-size", "64", "--dropout", "0.3", "--batch-size", "16",
            "--max-steps", "300", "--log-every", "1", "--save-every", "10", "--valid-every", "1000",
            "--valid-max-sentences", "5", "--threads", "1", *extra]


def test_resume_after_a_kill_continues_like_an_unkilled_run(reverse_corpus, tmp_path):
    subprocess.run(_train_cmd(reverse_corpus, tmp_path / "ref"), check=True, capture_output=True)
    reference = _losses(tmp_path / "ref" / "train.jsonl")
    proc = subprocess.Popen(_train_cmd(reverse_corpus, tmp_path / "run"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    log = tmp_path / "run" / "train.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (log.exists() and len(log.read_text().splitlines()) >= 25):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    killed_at = max(_losses(log))
    assert killed_at < 300, "the run finished before it could be killed"
    subprocess.run(_train_cmd(reverse_corpus, tmp_path / "run", "--resume"), check=True, capture_output=True)
    resumed = _losses(log)
    assert sorted(resumed) == sorted(reference)
    assert resumed == reference


def test_float16_s_loss_scale_resumes_where_the_run_left_it(reverse_corpus, tmp_path, monkeypatch):
    """(float16 mixed precision, as on GPUs before Ampere, here on the CPU.) A scale starting far too high is halved
    at each update it skips; a resumed run goes on from the run's scale, not from the start's, so it skips and
    learns as the run would have."""
    import nmtkit.train.trainer as trainer_module

    monkeypatch.setattr(trainer_module, "autocast_dtype", lambda device: torch.float16)
    scaler = torch.amp.GradScaler
    monkeypatch.setattr(torch.amp, "GradScaler", lambda device, enabled: scaler(device, 2.0 ** 40, enabled=enabled))
    cfg = config(data=str(reverse_corpus), amp=True, max_steps=40, log_every=1, valid_every=20, threads=1,
                 valid_max_sentences=2)
    whole = Trainer({**cfg, "save_dir": str(tmp_path / "whole")})
    whole.train()
    Trainer({**cfg, "save_dir": str(tmp_path / "cut"), "max_steps": 20}).train()
    resumed = Trainer({**cfg, "save_dir": str(tmp_path / "cut")}, resume=True)
    assert resumed.scaler.get_scale() < 2.0 ** 30  # (halved at each of the first updates)
    resumed.train()
    assert resumed.scaler.get_scale() == whole.scaler.get_scale()
    assert _losses(tmp_path / "cut" / "train.jsonl") == _losses(tmp_path / "whole" / "train.jsonl")


def test_the_time_a_checkpoint_records_includes_its_validation(reverse_corpus, tmp_path, monkeypatch):
    """--max-time counts a resumed run's time from the checkpoint's: a validation's time lost there was time
    trained again at every resume."""
    validate = Trainer.validate
    monkeypatch.setattr(Trainer, "validate", lambda self: (time.sleep(0.5), validate(self))[1])
    Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path), max_steps=2, valid_every=2, threads=1,
                   valid_max_sentences=2)).train()
    saved = torch.load(tmp_path / "last.pt", weights_only=True)["progress"]["wall"]
    logged = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()][-1]
    assert saved >= 0.5 and logged["type"] == "valid" and logged["wall_s"] == pytest.approx(saved, abs=0.01)


def test_the_processes_of_a_distributed_run_stop_at_the_first_s_clock(reverse_corpus, tmp_path, monkeypatch):
    """--max-time under torchrun: the time is read at the logged updates only, and the first process' reading
    decides for all (here the first's time is up where this process' own clock says it is not)."""
    import nmtkit.train.trainer as trainer_module

    trainer = Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path), log_every=5, max_time=10.0))
    asked = []
    monkeypatch.setattr(trainer_module, "broadcast", lambda value, dist: asked.append(value) or True)
    trainer.dist = DistInfo(rank=1, world_size=2)
    trainer._wall_start, trainer._wall_base = time.perf_counter(), 0.0
    reasons = []
    for step in range(1, 11):
        trainer.progress.step = step
        reasons.append(trainer._stop_reason(600.0))
    assert reasons == [None] * 4 + ["10 minutes of training done"] + [None] * 4 + ["10 minutes of training done"]
    assert asked == [False, False]  # (this process' own reading, sent and overruled)
    trainer.progress.step = 7  # a run resumed at an update that is not logged: its clock is read before the first
    assert trainer._stop_reason(600.0, start=True) == "10 minutes of training done" and asked == [False] * 3


def test_parameters_that_are_not_finite_are_never_saved(reverse_corpus, tmp_path):
    trainer = Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path)))
    with torch.no_grad():
        next(trainer.model.parameters())[0].fill_(float("nan"))
    with pytest.raises(Diverged, match="^training diverged: update 0 left parameters that are not finite"):
        trainer._save("last.pt", [{}])
    assert not (tmp_path / "last.pt").exists()


def test_resuming_a_finished_run_changes_nothing(reverse_corpus, tmp_path):
    """Not one more update or validation (which could halve the learning rate) once --max-steps is reached."""
    cfg = config(data=str(reverse_corpus), save_dir=str(tmp_path), max_steps=4, valid_every=2, threads=1)
    Trainer(cfg).train()
    before = {name: (tmp_path / name).read_bytes() for name in ("last.pt", "best.pt", "train.jsonl")}
    Trainer(cfg, resume=True).train()
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    Trainer({**cfg, "max_steps": 6}, resume=True).train()  # a larger budget goes on
    steps = [json.loads(l)["step"] for l in (tmp_path / "train.jsonl").read_text().splitlines()]
    assert max(steps) == 6


def test_resume_takes_a_learning_rate_given_again_and_otherwise_keeps_the_runs(reverse_corpus, tmp_path):
    """The run's rate where it stopped (decayed, here 0.0005) unless --lr is given again with another value; with
    inverse-sqrt, the new --lr is the schedule's base from the update it resumes at."""
    cfg = config(data=str(reverse_corpus), save_dir=str(tmp_path), max_steps=2, valid_every=2, threads=1)
    Trainer(cfg).train()
    ckpt = torch.load(tmp_path / "last.pt", weights_only=True)
    ckpt["schedule"]["lr"] = 0.0005  # as if validations had decayed it
    torch.save(ckpt, tmp_path / "last.pt")
    kept = Trainer(cfg, resume=True)
    assert kept.schedule.lr == kept.optimizer.param_groups[0]["lr"] == 0.0005
    given = Trainer({**cfg, "lr": 0.002}, resume=True)
    assert given.schedule.lr == given.optimizer.param_groups[0]["lr"] == 0.002
    sqrt = config(data=str(reverse_corpus), save_dir=str(tmp_path / "s"), max_steps=2, valid_every=2, threads=1,
                  lr_schedule="inverse-sqrt", warmup_steps=4)
    Trainer(sqrt).train()
    rates = [Trainer({**sqrt, "lr": lr}, resume=True).optimizer.param_groups[0]["lr"] for lr in (0.005, 0.01)]
    assert rates == pytest.approx([0.005 * 3 / 4, 0.01 * 3 / 4])  # the rate of update 3 of 4 warm-up updates


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ddp_worker(rank, arch, corpus, save_dir, port, out, max_steps=20, resume=False):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE="2", RANK=str(rank),
                      LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    info = init_distributed(torch.device("cpu"), 60)
    trainer = Trainer(config(arch, data=corpus, save_dir=save_dir, max_steps=max_steps, valid_every=10, dropout=0.2,
                             threads=1, accum_steps=2), info, resume=resume)
    trainer.train()
    params = torch.cat([p.detach().flatten() for p in trainer.model.parameters()])
    torch.save(params, f"{out}.{rank}")
    del trainer  # as `nmtkit train` leaves the group: no DDP wrapper holding it past destroy_process_group
    gc.collect()
    shutdown(info)


@pytest.mark.parametrize("arch", list(SIZES))
def test_two_gloo_processes_stay_in_sync(reverse_corpus, tmp_path, arch):
    import torch.multiprocessing as mp

    mp.start_processes(_ddp_worker, (arch, str(reverse_corpus), str(tmp_path / "ck"), _free_port(), str(tmp_path / "p")),
                       nprocs=2, start_method="spawn")
    p0, p1 = torch.load(tmp_path / "p.0"), torch.load(tmp_path / "p.1")
    assert torch.equal(p0, p1)
    initial = Trainer(config(arch, data=str(reverse_corpus), save_dir=str(tmp_path / "x"))).model
    assert not torch.equal(p0, torch.cat([p.detach().flatten() for p in initial.parameters()]))
    log = [json.loads(l) for l in (tmp_path / "ck" / "train.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log if r["type"] == "valid"] == [10, 20]


def test_two_gloo_processes_resume_exactly_each_with_its_own_dropout_masks(reverse_corpus, tmp_path):
    """(only rank 0's random state was saved, and both ranks were given it on resume: rank 1 drew other dropout
    masks than the uninterrupted run's)"""
    import torch.multiprocessing as mp

    def spawn(save_dir, out, max_steps, resume=False):
        mp.start_processes(_ddp_worker, ("rnnsearch", str(reverse_corpus), str(save_dir), _free_port(), str(out),
                                         max_steps, resume), nprocs=2, start_method="spawn")

    spawn(tmp_path / "straight", tmp_path / "a", 20)
    spawn(tmp_path / "stopped", tmp_path / "b", 10)
    spawn(tmp_path / "stopped", tmp_path / "b", 20, resume=True)
    assert torch.equal(torch.load(tmp_path / "a.0"), torch.load(tmp_path / "b.0"))


def test_a_process_group_that_cannot_form_times_out_clearly(monkeypatch):
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    start = time.time()
    with pytest.raises(NmtkitError, match=r"rank 0 of 2: the process group .* did not form within 2 s \(--dist-timeout\)"):
        init_distributed(torch.device("cpu"), 2)
    assert time.time() - start < 30
    assert DistInfo().world_size == 1


def test_a_batch_that_runs_out_of_memory_is_skipped_and_counted(reverse_corpus, tmp_path, monkeypatch):
    trainer = Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path), max_steps=5, valid_every=5))
    forward = trainer.net.forward
    calls = {"n": 0}

    def flaky(batch):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 99 GB")
        return forward(batch)

    monkeypatch.setattr(trainer.net, "forward", flaky)
    trainer.train()
    assert trainer.progress.oom_skipped == 1 and trainer.progress.step == 5
    assert trainer.progress.batch == 6


def test_other_errors_are_not_swallowed(reverse_corpus, tmp_path, monkeypatch):
    trainer = Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path), max_steps=5))
    monkeypatch.setattr(trainer.net, "forward", lambda batch: (_ for _ in ()).throw(RuntimeError("shape mismatch")))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        trainer.train()


def test_torchrun_two_processes_end_to_end(reverse_corpus, tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(_free_port()),
           "-m", "nmtkit", "train", "--data", str(reverse_corpus), "--save-dir", str(tmp_path / "ck"),
           "--emb-size", "16", "--enc-size", "16", "--dec-size", "32", "--max-steps", "6", "--valid-every", "3",
           "--valid-max-sentences", "5", "--threads", "1", "--dist-timeout", "60"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "2 processes" in r.stderr
    log = [json.loads(l) for l in (tmp_path / "ck" / "train.jsonl").read_text().splitlines()]
    assert [x["step"] for x in log if x["type"] == "valid"] == [3, 6]


def test_an_error_of_one_process_stops_the_run_at_once_in_one_line_each(reverse_corpus, tmp_path):
    """Rank 0 fails at its validation while rank 1 waits for its result: rank 0 leaves without waiting at the
    barrier (which rank 1 would never reach: the run hung until --dist-timeout), rank 1's wait fails, and each says
    why in one line."""
    (tmp_path / "plant").mkdir()
    (tmp_path / "plant" / "sitecustomize.py").write_text(
        "import os\n"
        "if os.environ.get('RANK') == '0':\n"
        "    from nmtkit.errors import NmtkitError\n"
        "    from nmtkit.train.trainer import Trainer\n"
        "    def validate(self):\n"
        "        raise NmtkitError('valid.de:51: invalid UTF-8 (planted)')\n"
        "    Trainer.validate = validate\n")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-port", str(_free_port()),
           "-m", "nmtkit", "train", "--data", str(reverse_corpus), "--save-dir", str(tmp_path / "ck"),
           "--emb-size", "16", "--enc-size", "16", "--dec-size", "32", "--max-steps", "6", "--valid-every", "3",
           "--valid-max-sentences", "5", "--threads", "1", "--dist-timeout", "120"]
    began = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "plant"), os.getcwd()])})
    assert r.returncode != 0 and time.monotonic() - began < 60, r.stderr[-3000:]
    assert "error: valid.de:51: invalid UTF-8 (planted)" in r.stderr
    assert "error: rank 1 of 2: another process of the run stopped (its own error says why)" in r.stderr, r.stderr[-3000:]


def test_resume_maps_the_optimizer_state_by_name_when_the_order_differs(reverse_corpus, tmp_path):
    """Checkpoints of nmtkit 0.1.0 list their parameters in another order: resume by name, not position."""
    Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path), max_steps=2, valid_every=2)).train()
    ckpt = torch.load(tmp_path / "last.pt", weights_only=True)
    state, names = ckpt["optimizer"]["state"], ckpt["param_names"]
    order = list(reversed(range(len(names))))
    ckpt["param_names"] = [names[i] for i in order]
    ckpt["optimizer"]["state"] = {new: state[old] for new, old in enumerate(order)}
    torch.save(ckpt, tmp_path / "last.pt")
    trainer = Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path), max_steps=3), resume=True)
    for i, p in enumerate(trainer.model.parameters()):
        assert torch.equal(trainer.optimizer.state[p]["exp_avg"], state[i]["exp_avg"])


def test_an_update_over_k_batches_equals_one_update_over_their_union(reverse_corpus, tmp_path):
    trainers = [Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path / n), optimizer="sgd", lr=0.5,
                               clip_norm=0.0, label_smoothing=0.1, accum_steps=3)) for n in "ab"]
    data = Shard(trainers[0].corpus.shard_paths("train")[0])
    parts = [examples_batch([(data, i) for i in range(k, k + 5)]) for k in (0, 5, 10)]
    union = examples_batch([(data, i) for i in range(15)])
    loss_parts = trainers[0]._update(parts)
    loss_union = trainers[1]._update([union])
    assert loss_parts == pytest.approx(loss_union, rel=1e-5)
    for (name, a), b in zip(trainers[0].model.named_parameters(), trainers[1].model.parameters()):
        assert torch.allclose(a, b, atol=1e-6), name
    before = Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path / "c"))).model
    assert not torch.allclose(next(before.parameters()), next(trainers[0].model.parameters()))


def test_adam_betas_reach_the_optimiser(reverse_corpus, tmp_path):
    """--adam-beta1/--adam-beta2 (a Transformer's 0.98) are the betas Adam updates with."""
    trainer = Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path), adam_beta1=0.8, adam_beta2=0.98))
    assert trainer.optimizer.param_groups[0]["betas"] == (0.8, 0.98)
    assert Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path / "d"))).optimizer.param_groups[0][
        "betas"] == (0.9, 0.999)
    Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path / "r"), max_steps=2, valid_every=2)).train()
    resumed = Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path / "r"), adam_beta2=0.98,
                             weight_decay=0.01), resume=True)  # settings given again win over the saved ones
    assert resumed.optimizer.param_groups[0]["betas"] == (0.9, 0.98)
    assert resumed.optimizer.param_groups[0]["weight_decay"] == 0.01


@pytest.mark.parametrize("model", [["--arch", "rnnsearch", *TINY_MODEL],
                                   ["--arch", "transformer", "--d-model", 16, "--ffn-size", 32, "--heads", 2,
                                    "--enc-layers", 1, "--dec-layers", 1, "--dropout", 0, "--attention-dropout", 0,
                                    "--positions", "learned", "--max-positions", 12]])
def test_padding_batches_to_a_multiple_trains_the_same_model(corpus_dir, tmp_path, model):
    """--pad-multiple only widens the batches (padding is masked): the same losses; a table of 12 positions caps
    the width at 13 where 16 would overflow it."""
    losses = []
    for multiple in (1, 8):
        run(["train", "--data", corpus_dir, *model, "--max-steps", 6, "--log-every", 2, "--valid-every", 6,
             "--pad-multiple", multiple, "--save-dir", tmp_path / f"run{multiple}"])
        records = [json.loads(line) for line in (tmp_path / f"run{multiple}" / "train.jsonl").read_text().splitlines()]
        losses.append([r["loss"] for r in records if r["type"] == "train"])
    assert losses[0] == pytest.approx(losses[1], rel=1e-4)


def test_batches_made_ahead_train_the_same_model(corpus_dir, tmp_path, monkeypatch):
    """The background thread of GPUs (forced here on the CPU) gives the same batches in the same order: the same
    losses, the same checkpoint; the run stops its worker when it stops mid-epoch."""
    import threading

    import torch

    from nmtkit.train import trainer

    runs = {}
    for ahead in (0, 2):
        monkeypatch.setattr(trainer, "batches_ahead", lambda device, ahead=ahead: ahead)
        run(["train", "--data", corpus_dir, "--arch", "rnnsearch", *TINY_MODEL, "--max-steps", 5, "--log-every", 1,
             "--valid-every", 5, "--save-dir", tmp_path / f"run{ahead}"])
        records = [json.loads(line) for line in (tmp_path / f"run{ahead}" / "train.jsonl").read_text().splitlines()]
        runs[ahead] = ([r["loss"] for r in records if r["type"] == "train"],
                       torch.load(tmp_path / f"run{ahead}" / "last.pt", weights_only=False)["model"])
    assert runs[0][0] == runs[2][0]
    assert all(torch.equal(runs[0][1][k], runs[2][1][k]) for k in runs[0][1])
    assert not any(t.name == "nmtkit-batches" and t.is_alive() for t in threading.enumerate())


def test_a_run_over_many_small_shards_resumes_exactly_across_their_boundaries(reverse_corpus, tmp_path):
    """30 shards of 100 pairs, bucketed several at a time: a run stopped mid-epoch (in the middle of a window of
    shards) and resumed logs the losses of a run never stopped, epoch boundary included."""
    d = tmp_path / "text"
    d.mkdir()
    for name in ("train.in", "train.out", "valid.in", "valid.out"):
        (d / name).write_text((reverse_corpus.parent / name).read_text())
    corpus = preprocess(d / "data", "in", "out", d / "train", d / "valid", vocab=VocabSpec("word", 50), shard_size=100)
    assert len(list((d / "data").glob("train.*.h5"))) == 30
    cfg = config(data=str(corpus), save_dir=str(tmp_path / "once"), max_steps=120, log_every=1, valid_every=1000,
                 valid_max_sentences=5, batch_size=32, threads=1)  # 3,000 pairs: 94 batches an epoch
    Trainer(cfg).train()
    stopped = {**cfg, "save_dir": str(tmp_path / "twice")}
    Trainer({**stopped, "max_steps": 37}).train()
    Trainer(stopped, resume=True).train()
    once, twice = _losses(tmp_path / "once" / "train.jsonl"), _losses(tmp_path / "twice" / "train.jsonl")
    assert sorted(once) == list(range(1, 121)) and twice == once


@pytest.mark.parametrize("arch", ["transformer", "rnnsearch"])
def test_compile_runs_the_forward_pass_through_torch_compile_and_saves_the_plain_model(reverse_corpus, tmp_path,
                                                                                         monkeypatch, capsys, arch):
    compiled = []

    def fake_compile(module, **options):  # (torch.compile itself takes minutes on a CPU: bench/gpu_check.sh times it)
        def forward(batch):
            compiled.append(options)
            return module(batch)
        return forward

    monkeypatch.setattr(torch, "compile", fake_compile)
    trainer = Trainer(config(arch, data=str(reverse_corpus), save_dir=str(tmp_path), max_steps=3, valid_every=3,
                             compile=True))
    trainer.train()
    if arch == "transformer":  # (tests/models/test_contract.py: it compiles once for batches of every shape)
        assert len(compiled) == 3 and compiled[0] == {"dynamic": True, "backend": "inductor"}
    else:  # a loop over steps: compiled again for every batch shape, so not compiled, and the user told
        assert compiled == [] and "--compile: rnnsearch would be compiled again" in capsys.readouterr().err
    saved = torch.load(tmp_path / "last.pt", weights_only=True)["model"]
    assert saved.keys() == trainer.model.state_dict().keys() and not any("_orig_mod" in k for k in saved)


def test_last_pt_is_saved_before_best_pt(reverse_corpus, tmp_path, monkeypatch):
    """(A stop between the two then leaves a run to resume, which writes best.pt; the other way round it left
    best.pt without last.pt, a folder train refuses to start in.)"""
    saved = []
    save = Trainer._save
    monkeypatch.setattr(Trainer, "_save", lambda self, name, rngs: (saved.append(name), save(self, name, rngs))[1])
    Trainer(config(data=str(reverse_corpus), save_dir=str(tmp_path), max_steps=2, valid_every=2, threads=1,
                   valid_max_sentences=2)).train()
    assert saved == ["last.pt", "best.pt"]


def _valid_steps(save_dir):
    return [r["step"] for r in map(json.loads, (save_dir / "train.jsonl").read_text().splitlines())
            if r["type"] == "valid"]


def test_an_epoch_ending_at_a_validation_validates_its_model_once(tmp_path):
    """(The end of the epoch validated the same model again, a second record of the step that --patience counted.)"""
    corpus = write_reverse_corpus(tmp_path, train=96, valid=8)
    cfg = config(data=str(corpus), save_dir=str(tmp_path / "a"), max_epochs=1, valid_every=1000, threads=1)
    Trainer(cfg).train()
    (steps,) = _valid_steps(tmp_path / "a")  # the updates of an epoch
    Trainer({**cfg, "save_dir": str(tmp_path / "b"), "max_epochs": 2, "valid_every": steps}).train()
    assert _valid_steps(tmp_path / "b") == [steps, 2 * steps]


def test_resuming_a_run_that_stopped_early_changes_nothing(reverse_corpus, tmp_path):
    """(It trained --valid-every more updates at each --resume, and stopped again.) A larger --patience goes on."""
    cfg = config(data=str(reverse_corpus), save_dir=str(tmp_path), lr=1e-12, max_steps=100, valid_every=2, patience=1,
                 valid_max_sentences=5, threads=1)
    Trainer(cfg).train()
    assert _valid_steps(tmp_path) == [2, 4]  # (BLEU no better at 4, with a learning rate of nothing)
    before = {name: (tmp_path / name).read_bytes() for name in ("last.pt", "best.pt", "train.jsonl")}
    Trainer(cfg, resume=True).train()
    assert {name: (tmp_path / name).read_bytes() for name in before} == before
    Trainer({**cfg, "patience": 2}, resume=True).train()
    assert _valid_steps(tmp_path) == [2, 4, 6]


def test_resume_removes_the_temporary_files_of_every_checkpoint_a_kill_left(reverse_corpus, tmp_path):
    """(Those of step-N.pt, written under --keep-checkpoints, stayed.)"""
    cfg = config(data=str(reverse_corpus), save_dir=str(tmp_path), max_steps=2, valid_every=2, threads=1,
                 valid_max_sentences=5, keep_checkpoints=2)
    Trainer(cfg).train()
    left = [tmp_path / name for name in (".last.pt.x1.tmp", ".step-4.pt.x2.tmp", ".config.yaml.x3.tmp")]
    for path in left:
        path.write_bytes(b"part")
    Trainer(cfg, resume=True)
    assert not any(path.exists() for path in left) and (tmp_path / "step-2.pt").exists()


def test_a_resumed_attempt_that_saves_nothing_leaves_the_runs_settings(reverse_corpus, tmp_path):
    """(config.yaml was written before the first update: the next plain --resume took the failed attempt's options.)"""
    cfg = config(data=str(reverse_corpus), save_dir=str(tmp_path), max_steps=2, valid_every=2, threads=1,
                 valid_max_sentences=5)
    Trainer(cfg).train()
    before = (tmp_path / "config.yaml").read_bytes()
    with pytest.raises(Diverged):
        Trainer({**cfg, "max_steps": 50, "lr": 1e30, "clip_norm": 0.0}, resume=True).train()
    assert (tmp_path / "config.yaml").read_bytes() == before
    Trainer({**cfg, "max_steps": 4}, resume=True).train()  # (a checkpoint saved: its settings with it)
    assert "max_steps: 4" in (tmp_path / "config.yaml").read_text()
