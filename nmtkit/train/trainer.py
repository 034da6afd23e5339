"""The training loop: batches -> model -> loss -> update, with validation, the schedule and checkpoints
at their times. The parts live beside it: :mod:`~nmtkit.train.validation`, :mod:`~nmtkit.train.schedules`,
:mod:`~nmtkit.train.run_state`, :mod:`~nmtkit.train.warm_start`."""
from __future__ import annotations

import contextlib
import itertools
import math
import time
from pathlib import Path
from typing import Iterable, Iterator, Optional

import torch
import yaml
from torch import nn

from nmtkit.checkpoint import (
    CORPUS_RECORDS,
    first_mismatch,
    kept_checkpoints,
    load_checkpoint,
    same_state,
    save_checkpoint,
    step_file,
)
from nmtkit.compiling import check_compiler, compiled
from nmtkit.data.batching import Batch, TrainingBatches
from nmtkit.data.prefetch import Prefetched
from nmtkit.data.shards import Corpus
from nmtkit.data.temporaries import remove_every
from nmtkit.data.text import atomic_output
from nmtkit.data.verify import verify_corpus
from nmtkit.device import autocast_dtype, is_out_of_memory, peak_memory_gb, pick_device
from nmtkit.errors import NmtkitError
from nmtkit.metrics.perplexity import perplexity
from nmtkit.metrics.text import LABELS, VALIDATION_METRICS
from nmtkit.models import build_model
from nmtkit.models.loss import cross_entropy, cross_entropy_and_nll
from nmtkit.models.registry import get_spec, option_values
from nmtkit.progress import log, progress, warn
from nmtkit.train.diagnostics import gradient_norms
from nmtkit.train.distributed import DistInfo, broadcast, gathered, process_device
from nmtkit.train.length_limits import check_length_limits, width_caps
from nmtkit.train.optim import (
    DEFAULT_LR,
    load_optimizer_by_name,
    load_state_keeping_settings,
    make_optimizer,
    set_lr,
)
from nmtkit.train.profiling import UpdateProfiler, profiled_updates
from nmtkit.train.run_log import RunLog
from nmtkit.train.run_state import Progress, restore_rng, rng_state
from nmtkit.train.schedules import make_schedule
from nmtkit.train.validation import VALID_MAX_LEN, EarlyStopping, too_long_to_validate, validate
from nmtkit.train.warm_start import warm_start


def chunked(items: Iterable[Batch], k: int) -> Iterator[list[Batch]]:
    """Consecutive groups of ``k`` batches (the last one of an epoch may be shorter)."""
    it = iter(items)
    while group := list(itertools.islice(it, k)):
        yield group


def batches_ahead(device: torch.device) -> int:
    """How many training batches a background thread makes in advance on ``device``: 2 on GPUs (batch making off
    the critical path), none on CPUs (whose cores compute the updates)."""
    return 2 if device.type == "cuda" else 0


class Diverged(NmtkitError):
    """Training diverged (a loss or parameters that are not finite): stopped before any checkpoint is written."""

    def __init__(self, what: str):
        super().__init__(f"training diverged: {what}; stopped without saving (last.pt and best.pt are as they were); "
                         "train again with a lower --lr or with --clip-norm (--resume --lr X continues the run from last.pt)")


#: the training options a resumed run keeps, and why: what last.pt holds was made by them
RUN_STATE_OF = {"optimizer": "whose state (moments, step counts) last.pt holds",
                "decay_metric": "by which its best validation so far and --patience's count were judged",
                "valid_tokenize": "by which its validation BLEU so far was computed"}


class Trainer:
    """Trains one model on a corpus as ``config`` says; see :mod:`nmtkit.train.options`.

    ``resume`` continues from ``save_dir/last.pt`` exactly where it stopped (same batches,
    same dropout masks). ``init_from`` warm-starts from another checkpoint's matching
    parameters; its optimiser state and learning rate come along only if asked.
    """

    def __init__(self, config: dict, dist: Optional[DistInfo] = None, resume: bool = False,
                 init_from: Optional[str] = None, init_optimizer: bool = False, init_lr: bool = False):
        config = dict(config, lr=DEFAULT_LR[config["optimizer"]] if config["lr"] is None else config["lr"])
        self.config = config
        profiled = profiled_updates(config["profile"], config["max_steps"])  # (checked before any work)
        self.dist = dist or DistInfo()
        self.device = process_device(pick_device(config["device"]), config["device"], self.dist)
        if self.device.type == "cuda" and self.dist.enabled:
            torch.cuda.set_device(self.device)
        if config["threads"] > 0:
            torch.set_num_threads(config["threads"])
        self.save_dir = Path(config["save_dir"])
        self.corpus = Corpus.open(config["data"])
        checked = verify_corpus(self.corpus, checksums=self.dist.is_main)
        if self.dist.is_main:
            log(f"corpus {self.corpus.folder}: {checked.files} files"
                + (", sizes and checksums verified" if checked.checksums else " (no checksums recorded)")
                + f"; {', '.join(f'{n:,} {split}' for split, n in checked.examples.items())} examples")
        torch.manual_seed(config["seed"])
        self.model = build_model(config, self.corpus.meta, self.corpus.vocabs).to(self.device)
        check_length_limits(self.model, self.corpus, config["max_len"])
        too_long = too_long_to_validate(self.corpus)
        if too_long and self.dist.is_main:
            warn(f"--data {config['data']}: {too_long:,} validation pair(s) with a side of more than {VALID_MAX_LEN:,} "
                 "tokens: left out of the validation perplexity, and only their first "
                 f"{VALID_MAX_LEN:,} input tokens translated")
        if config["freeze_embeddings"]:
            for m in self.model.modules():
                if isinstance(m, nn.Embedding):
                    m.weight.requires_grad_(False)
        self.optimizer = make_optimizer(config["optimizer"], self.model.parameters(), config["lr"],
                                        config["weight_decay"], (config["adam_beta1"], config["adam_beta2"]),
                                        self.device)
        self.schedule = make_schedule(config, config["lr"])
        set_lr(self.optimizer, self.schedule.lr)
        self.stopping = EarlyStopping(config["decay_metric"], config["patience"])
        self.amp_dtype = autocast_dtype(self.device) if config["amp"] else None
        if config["amp"] and self.amp_dtype is None and self.dist.is_main:
            warn(f"--amp: this {self.device.type.upper()} has no native bfloat16 arithmetic (AVX512-BF16 or AMX), "
                 "where mixed precision is slower than float32; training in float32")
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.amp_dtype == torch.float16)
        self.progress = Progress()
        if resume:
            self._resume()
        elif init_from:
            self._warm_start(init_from, init_optimizer, init_lr)
        self.net = self.model
        if self.dist.enabled:
            self.net = nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        if config["compile"] and self.model.compiles_once:
            check_compiler(self.device)
            self.net = compiled(self.net)
            if self.dist.is_main:  # (or the first log, minutes later, would be the first sign of life)
                log("--compile: the first updates compile the model (minutes on a CPU) and log slower than the rest")
        elif config["compile"] and self.dist.is_main:
            warn(f"--compile: {config['arch']} would be compiled again for every new batch shape (its forward "
                 "pass loops over steps); training it uncompiled")
        self.batches = TrainingBatches(self.corpus.shard_paths("train"), config["batch_size"],
                                       config["batch_type"] == "tokens", config["seed"], self.dist.rank,
                                       self.dist.world_size, config["max_len"],
                                       config["pad_multiple"] or (8 if self.device.type == "cuda" else 1),
                                       width_caps(self.model))
        self.run_log = RunLog(self.save_dir / "train.jsonl")
        self.profiler = UpdateProfiler(profiled if self.dist.is_main else None, self.save_dir, self.device)
        self.diagnostics: dict[str, float] = {}  # --diagnostics of the update to log next
        self.resumed = resume

    # -- starting points ------------------------------------------------------------
    def _resume(self) -> None:
        path = self.save_dir / "last.pt"
        stale = sum(remove_every(self.save_dir / name)  # ("step-*.pt": a glob, as the temporary's name is)
                    for name in ("last.pt", "best.pt", "step-*.pt", "config.yaml"))
        if stale and self.dist.is_main:
            log(f"removed {stale} temporary checkpoint file(s) of the killed run")
        ckpt = load_checkpoint(path, ("model", "config", "optimizer", "schedule", "stopping", "progress", "rng"))
        if ckpt["config"]["arch"] != self.config["arch"]:
            raise NmtkitError(f"--resume: {path} is a {ckpt['config']['arch']} model, not {self.config['arch']}",
                              exit_code=2)
        built = [o for o in get_spec(self.config["arch"]).options if not o.training_only]  # (dropout may change)
        ours, theirs = option_values(self.config, built), option_values(ckpt["config"], built)
        for name in (n for n in ours if ours[n] != theirs[n]):  # (e.g. --heads: a model of the same shapes)
            flag = "--" + name.replace("_", "-")
            raise NmtkitError(f"--resume: {flag} {ours[name]}: the run in {self.save_dir} built its model with {flag} "
                              f"{theirs[name]}; resume without it, here or in its config.yaml (or start a new run, "
                              f"--init-from {path})", exit_code=2)
        for name, why in RUN_STATE_OF.items():  # (training options whose state last.pt holds)
            run_value = ckpt["config"].get(name, self.config[name])
            if self.config[name] != run_value:
                flag = "--" + name.replace("_", "-")
                raise NmtkitError(f"--resume: {flag} {self.config[name]}: the run in {self.save_dir} trained with "
                                  f"{flag} {run_value}, {why}; resume without it, here or in its config.yaml (or start "
                                  f"a new run, --init-from {path})", exit_code=2)
        trained = ckpt.get("vocab")
        changed = [name for name, vocab in self.corpus.vocabs.items()
                   if trained is not None and not same_state(trained.get(name), vocab.state())]
        if changed:
            raise NmtkitError(f"--resume: --data {self.config['data']}: the vocabulary of {changed[0]} is not the one "
                              f"the run in {self.save_dir} trained with; resume on the run's corpus (or start a new "
                              "run with --init-from)", exit_code=2)
        mismatch = first_mismatch(self.model.state_dict(), ckpt["model"])
        if mismatch:
            raise NmtkitError(f"--resume: {path} does not fit the configured model: {mismatch}")
        self.model.load_state_dict(ckpt["model"])
        if ckpt.get("param_names") == self._trainable_names():
            load_state_keeping_settings(self.optimizer, ckpt["optimizer"])
        else:  # the parameters in another order (a checkpoint of nmtkit 0.1.0): by name
            load_optimizer_by_name(self.model, self.optimizer, ckpt)
        self.schedule.load_state(ckpt["schedule"])
        self.stopping.load_state(ckpt["stopping"])
        if self.scaler.is_enabled() and ckpt.get("scaler"):  # (float16's loss scale, as the run had brought it)
            self.scaler.load_state_dict(ckpt["scaler"])
        self.progress = Progress(**ckpt["progress"])
        run_lr, reached = ckpt["config"].get("lr"), self.schedule.lr
        changed = run_lr is not None and self.config["lr"] != run_lr  # --lr given again, to another value
        if changed and not self.schedule.sets_every_update:
            self.schedule.lr = self.config["lr"]
        elif changed:  # (the schedule's rate at the next update, from the new base rate)
            self.schedule.on_update(self.progress.step)
        set_lr(self.optimizer, self.schedule.lr)
        ranks = ckpt.get("rng_of_ranks") or [ckpt["rng"]]  # (each process's own dropout masks go on)
        restore_rng(ranks[self.dist.rank] if len(ranks) == self.dist.world_size else ckpt["rng"])
        if self.dist.is_main:
            self._warn_of_a_new_batch_order(ckpt["config"], ckpt.get("processes"))
            self._best_of_last()
            log(f"resuming from {path}: step {self.progress.step}, epoch {self.progress.epoch}, "
                f"lr {self.schedule.lr:.3g}" + (f" (--lr {self.config['lr']:.3g} given; the run had --lr {run_lr:.3g}"
                                                 f" and was at {reached:.3g})" if changed else ""))

    def _best_of_last(self) -> None:
        """best.pt written from the resumed last.pt where the run stopped between the two at a new best (last.pt is
        saved first): best.pt was missing, or an earlier best."""
        best = self.save_dir / "best.pt"
        if self.stopping.best_step is None or self.stopping.best_step != self.progress.step:
            return
        try:
            if torch.load(best, map_location="cpu", mmap=True, weights_only=True)["progress"]["step"] == self.progress.step:
                return
        except Exception:  # (missing, or unreadable: written anew, from the model it is to hold)
            pass
        self._save("best.pt", [rng_state()])
        log(f"wrote {best}: the run stopped before it at its best validation (step {self.progress.step})")

    def _warn_of_a_new_batch_order(self, run: dict, processes: Optional[int]) -> None:
        """Resumed in the middle of an epoch with options that order its batches otherwise than the run's (``run``:
        its config; ``processes``: how many trained it, if the checkpoint says), or in another number of processes:
        the batches it had taken are skipped of the new order, so the rest of the epoch is not what the run left of
        it."""
        changed = [f"--{key.replace('_', '-')} {self.config[key]} (the run had {run[key]})"
                   for key in ("batch_size", "batch_type", "max_len", "seed")
                   if key in run and run[key] != self.config[key]]
        if processes not in (None, self.dist.world_size):  # (each takes its share of the epoch's batches)
            changed.append(f"{self.dist.world_size} process(es) (the run had {processes})")
        if changed and self.progress.batch:
            warn(f"--resume: {', '.join(changed)}: epoch {self.progress.epoch} goes on in a new batch order, its "
                 f"first {self.progress.batch:,} batches skipped, so some of its examples come twice and others not "
                 "at all; the next epochs are whole")

    def _warm_start(self, path: str, init_optimizer: bool, init_lr: bool) -> None:
        ckpt = load_checkpoint(path)  # (any checkpoint: last.pt, best.pt, step-N.pt, an average)
        for wanted, key, what in ((init_optimizer, "optimizer", "optimiser state"), (init_lr, "schedule", "learning rate")):
            if wanted and key not in ckpt:
                raise NmtkitError(f"--init-{'optimizer' if key == 'optimizer' else 'lr'}: {path} holds no {what} (a "
                                  "checkpoint for decoding: step-N.pt, an average); take it from the run's last.pt or "
                                  "best.pt, or leave the option out", exit_code=2)
        new, unused, zeroed, tied = warm_start(self.model, ckpt)
        if len(new) == len(self.model.state_dict()):
            raise NmtkitError(f"--init-from {path}: none of its parameters fits this {self.config['arch']} model (a "
                              f"{ckpt['config']['arch']} model of other names or shapes); nothing to start from",
                              exit_code=2)
        if self.dist.is_main:
            log(f"warm start from {path} ({ckpt['config']['arch']}): {len(self.model.state_dict()) - len(new)} "
                f"parameter tensors loaded, {len(new)} new" + (": " + ", ".join(new) if new else ""))
            trained = ckpt.get("vocab") or {}
            for stream in (s for s, vocab in self.corpus.vocabs.items()
                           if s in trained and not same_state(trained[s], vocab.state())):
                warn(f"--init-from {path}: its vocabulary of {stream} is not this corpus': the parameters over its "
                     "words (embeddings, output layer) that fit in shape are loaded row by row, each row now another "
                     "word's; to keep their words, preprocess with the checkpoint's vocabulary "
                     f"({'--tgt-vocab' if stream == 'tgt' else '--src-vocab'})")
            for names in tied:
                warn(f"--init-from {path}: {' and '.join(names)} are one tensor in this model (tied embeddings) but "
                     f"differ in the checkpoint: loaded its {names[0]}, not its {', '.join(names[1:])}")
            if zeroed:
                log(f"  starting at zero, so that the model first computes what the checkpoint did: {', '.join(zeroed)}")
            if unused:
                log(f"  not used from the checkpoint: {', '.join(unused)}")
        if init_optimizer:
            load_optimizer_by_name(self.model, self.optimizer, ckpt)
        old_lr = ckpt.get("schedule", {}).get("lr")
        if init_lr and self.schedule.sets_every_update:
            raise NmtkitError(f"--init-lr: the {self.config['lr_schedule']} schedule sets the learning rate at every "
                              "update; give --lr instead", exit_code=2)
        if init_lr:
            self.schedule.lr = old_lr
            set_lr(self.optimizer, old_lr)
        if self.dist.is_main:
            source = "from the checkpoint (--init-lr)" if init_lr else "from the config" + (
                f"; the checkpoint had {old_lr:.3g}, --init-lr keeps that" if old_lr is not None else "")
            log(f"  learning rate {self.schedule.lr:.3g} {source}; optimiser state "
                + ("loaded for matching parameters (--init-optimizer)" if init_optimizer else "fresh"))

    # -- one update -----------------------------------------------------------------
    def _update(self, batches: list[Batch]) -> Optional[float]:
        """Forward and backward of each batch, then one optimiser step: the gradient of the summed loss over all
        their target tokens, as for one batch of their union (``--accum-steps``). Returns the summed loss of the
        (forward) decoder, or None if the update was skipped (out of memory)."""
        tokens = sum(b.tgt_tokens for b in batches)
        nll_sum = torch.zeros((), device=self.device)
        diagnose = self.config["diagnostics"] and (self.progress.step + 1) % self.config["log_every"] == 0
        for i, batch in enumerate(batches):
            batch = batch.to(self.device)
            last = i == len(batches) - 1
            try:  # gradients are averaged across processes once, at the last batch
                with self.net.no_sync() if self.dist.enabled and not last else contextlib.nullcontext():
                    nll, loss = self._loss(batch, diagnose and last)
                    self.scaler.scale(loss / tokens).backward()
            except RuntimeError as e:
                if not is_out_of_memory(e) or self.dist.enabled:
                    raise
                self.optimizer.zero_grad(set_to_none=True)
                self.progress.oom_skipped += 1
                warn(f"out of memory on a batch of {batch.shape_text()}: skipped ({self.progress.oom_skipped} so far);"
                     " lower --batch-size or --max-len")
                return None
            nll_sum += nll.detach()
        if self.config["clip_norm"] > 0 or diagnose:
            self.scaler.unscale_(self.optimizer)
        if diagnose:  # before clipping: the gradients as the loss gives them
            self.diagnostics.update({f"grad.{name}": norm for name, norm in
                                     gradient_norms(self.model, self.model.gradient_groups()).items()})
        if self.config["clip_norm"] > 0:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.config["clip_norm"])
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        return float(nll_sum)  # one host sync per update

    def _loss(self, batch: Batch, diagnose: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """The forward decoder's summed negative log-likelihood of the gold tokens (what the log's loss and perplexity
        report: unsmoothed, comparable with validation's) and the loss to minimise: its label-smoothed cross-entropy,
        the auxiliary decoders' (Eq. 20, 23) and any extra terms of the model. With ``diagnose``, the model's
        statistics of the pass join :attr:`diagnostics` (for a model whose statistics read attention weights, the pass
        computes them: a Transformer then takes its explicit attention path, the same maths)."""
        with torch.autocast(self.device.type, dtype=self.amp_dtype or torch.float32, enabled=self.amp_dtype is not None), \
                self.model.attention_weights(True) if diagnose and self.model.diagnostics_read_weights \
                else contextlib.nullcontext():
            out = self.net(batch)
            if diagnose:
                with torch.no_grad():
                    self.diagnostics.update(self.model.diagnostics(batch, out))
            smoothing = self.config["label_smoothing"]
            loss, nll = cross_entropy_and_nll(out.logits, batch.tgt_out, smoothing=smoothing)
            for aux_logits, gold in out.auxiliary:
                loss = loss + cross_entropy(aux_logits, gold, smoothing=smoothing)
            for term in out.losses.values():
                loss = loss + term
        return nll, loss

    # -- the loop ---------------------------------------------------------------------
    def train(self) -> dict:
        """Train until a stopping condition; returns the last validation result."""
        c, p = self.config, self.progress
        budget = c["max_time"] * 60 if c["max_time"] > 0 else math.inf
        last_valid: dict = {}
        stop_reason = None
        self._wall_start, self._wall_base = time.perf_counter(), p.wall
        done = self._stop_reason(budget, start=True)
        if done:  # a resumed run that had already finished: not one more update or validation, its files as they are
            if self.dist.is_main:
                log(f"nothing to do: {done} already ({p.step} updates, epoch {p.epoch})")
            return last_valid
        if self.dist.is_main:
            self.save_dir.mkdir(parents=True, exist_ok=True)
            if not self.resumed:  # (a resumed run's, with last.pt: an attempt that saves nothing leaves the run's)
                self._write_config()
            said = self.run_log.start(p.step if self.resumed else None)
            if said:
                log(said)
            n_params = sum(x.numel() for x in self.model.parameters())
            log(f"{c['arch']}: {n_params:,} parameters on {self.device}"
                + (f", {self.dist.world_size} processes" if self.dist.enabled else ""))
        self.model.train()
        with progress(transient=False) as bar:
            task = bar.add_task("training", total=c["max_steps"] or None, completed=p.step, info="")
            while stop_reason is None:
                epoch = self.batches.epoch(p.epoch, skip=p.batch)
                ahead = batches_ahead(self.device)
                made = Prefetched(epoch, ahead, pin=self.device.type == "cuda") if ahead else contextlib.nullcontext(epoch)
                with made as batches:
                    for group in chunked(batches, c["accum_steps"]):
                        self.profiler.before(p.step + 1)
                        t0 = time.perf_counter()
                        loss = self._update(group)
                        dt = time.perf_counter() - t0
                        p.batch += len(group)
                        if loss is None:
                            continue
                        if not math.isfinite(loss) and not self.scaler.is_enabled():  # (a scaler skips such updates)
                            raise Diverged(f"the loss of update {p.step + 1} is {loss}")
                        p.step += 1
                        self.profiler.after(p.step, dt)
                        set_lr(self.optimizer, self.schedule.on_update(p.step))
                        p.elapsed += dt
                        tokens = sum(b.tgt_tokens for b in group)
                        p.tokens += tokens
                        p.window_loss += loss
                        p.window_tokens += tokens
                        p.window_time += dt
                        if p.step % c["log_every"] == 0:
                            self._log_train(bar, task)
                        stop_reason = self._stop_reason(budget)
                        if p.step % c["valid_every"] == 0 or stop_reason:
                            last_valid = self._validate_and_save()
                            if last_valid.get("stop"):
                                stop_reason = stop_reason or f"no improvement in {c['patience']} validations"
                        elif c["save_every"] and p.step % c["save_every"] == 0:
                            self._save("last.pt", gathered(rng_state(), self.dist))
                        if stop_reason:
                            break
                    else:
                        p.epoch += 1
                        p.batch = 0
                        if self.batches.skipped and self.dist.is_main:
                            log(f"epoch {p.epoch - 1}: skipped {self.batches.skipped} examples longer than "
                                f"{c['max_len']} tokens")
                        stop_reason = self._stop_reason(budget)
                        if stop_reason and self.stopping.last_step != p.step:  # (not twice the same model)
                            last_valid = self._validate_and_save()
        self.profiler.close()
        if self.dist.is_main:
            log(f"stopped: {stop_reason}; {p.step} updates, best {c['decay_metric']} {self.stopping.best}")
        return last_valid

    def _stop_reason(self, budget: float, start: bool = False) -> Optional[str]:
        """Why training stops here, if it does (``start``: before the first update of this run)."""
        c, p = self.config, self.progress
        self._clock()
        if c["max_steps"] and p.step >= c["max_steps"]:
            return f"{c['max_steps']} updates done"
        if self._time_up(budget, start):
            return f"{c['max_time']:g} minutes of training done"
        if c["max_epochs"] and p.epoch > c["max_epochs"]:
            return f"{c['max_epochs']} epochs done"
        if start and self.stopping.stopped:  # (a resumed run that had stopped early: --patience larger to go on)
            return f"no improvement in {c['patience']} validations"
        return None

    def _time_up(self, budget: float, start: bool = False) -> bool:
        """Whether ``--max-time`` is spent. The processes of a distributed run take the first's clock, read at the
        updates it logs (every ``--log-every``, the same on every process) and at the ``start``, so that all stop at
        one update: each by its own, one would validate while another waited in the next update's exchange of
        gradients."""
        if not self.dist.enabled or budget == math.inf:
            return self.progress.wall >= budget
        return (start or self.progress.step % self.config["log_every"] == 0) and broadcast(
            self.progress.wall >= budget, self.dist)

    def _log_train(self, bar, task) -> None:
        """Log the loss over the updates since the last log (a window a checkpoint keeps, so that a resumed
        run logs what the unkilled run would have) and start a new window."""
        p = self.progress
        loss = p.window_loss / max(p.window_tokens, 1)
        speed = p.window_tokens / max(p.window_time, 1e-9) * self.dist.world_size
        record = {"type": "train", "step": p.step, "epoch": p.epoch, "loss": round(loss, 5),
                  "ppl": round(perplexity(p.window_loss, p.window_tokens), 3), "tok_per_s": round(speed, 1),
                  "lr": self.schedule.lr, "elapsed_s": round(p.elapsed, 2)}
        peak = peak_memory_gb(self.device)
        if peak is not None:
            record["peak_gpu_gb"] = peak
        if self.diagnostics:
            record["diagnostics"], self.diagnostics = self.diagnostics, {}
        if self.dist.is_main:
            bar.update(task, completed=p.step,
                       info=f"ep {p.epoch} loss {loss:.3f} ppl {record['ppl']:.1f} {speed:,.0f} tok/s lr {self.schedule.lr:.2g}")
            self.run_log.append(record)
            log(f"step {p.step} | epoch {p.epoch} | loss {loss:.3f} | ppl {record['ppl']:.2f} | "
                f"{speed:,.0f} tok/s | lr {self.schedule.lr:.3g}")
        p.window_loss, p.window_tokens, p.window_time = 0.0, 0, 0.0

    # -- validation and checkpoints ---------------------------------------------------
    def validate(self) -> dict:
        """Perplexity of the validation set and BLEU/chrF/chrF++ of its translation (see :func:`validate`)."""
        return {"type": "valid", "step": self.progress.step, "epoch": self.progress.epoch,
                **validate(self.model, self.corpus, self.config, self.device)}

    def _clock(self) -> None:
        """The run's wall time so far, into its progress (what ``--max-time`` counts, across resumes)."""
        self.progress.wall = self._wall_base + time.perf_counter() - self._wall_start

    def _validate_and_save(self) -> dict:
        result = None
        if self.dist.is_main:
            result = self.validate()
        rngs = gathered(rng_state(), self.dist)  # (the others wait here while rank 0 validates)
        if self.dist.is_main:
            self._clock()  # (the validation's time counted in the run's, as saved)
            value = result[self.config["decay_metric"]]
            improved, stop = self.stopping.update(value, self.progress.step)
            self.schedule.on_validation(value)
            result.update(lr=self.schedule.lr, best=improved, stop=stop, elapsed_s=round(self.progress.elapsed, 2),
                          wall_s=round(self.progress.wall, 2))
            self.run_log.append(result)
            scores = " | ".join(f"{LABELS[m]} {result[m]:.2f}" for m in ("ppl", *VALIDATION_METRICS))
            log(f"validation at step {result['step']}: {scores}" + (" | new best" if improved else "")
                + f" | lr {self.schedule.lr:.3g}")
            self._save("last.pt", rngs)  # (first: a stop before best.pt is written leaves a run to resume, which writes it)
            if improved:
                self._save("best.pt", rngs)
            self._keep_checkpoint()
        result = broadcast(result, self.dist)
        self.stopping.last_step = result["step"]  # (every process: each decides alike whether to validate again)
        self.schedule.lr = result["lr"]
        set_lr(self.optimizer, self.schedule.lr)
        return result

    def _trainable_names(self) -> list[str]:
        """The names of the parameters the optimiser updates, in its order."""
        return [n for n, p in self.model.named_parameters() if p.requires_grad]

    def _keep_checkpoint(self) -> None:
        """The model of this validation as step-STEP.pt (what decoding needs), the last ``keep_checkpoints`` kept."""
        keep = self.config["keep_checkpoints"]
        if not keep:
            return
        save_checkpoint(self.save_dir / step_file(self.progress.step), self._decoding_payload())
        for old in kept_checkpoints(self.save_dir)[:-keep]:
            old.unlink()

    def _save(self, name: str, rngs: list[dict]) -> None:
        """The run's state as ``name`` (rank 0 writes it), with ``rngs``, every process's random number generators in
        rank order (:func:`~nmtkit.train.distributed.gathered`)."""
        if not self.dist.is_main:
            return
        if not bool(torch.stack([x.isfinite().all() for x in self.model.parameters()]).all()):
            raise Diverged(f"update {self.progress.step} left parameters that are not finite")
        save_checkpoint(self.save_dir / name, {
            **self._decoding_payload(), "optimizer": self.optimizer.state_dict(),
            "param_names": self._trainable_names(),
            "schedule": self.schedule.state(), "stopping": self.stopping.state(), "progress": self.progress.state(),
            "rng": rngs[0], "processes": self.dist.world_size, **({"rng_of_ranks": rngs} if len(rngs) > 1 else {}),
            **({"scaler": self.scaler.state_dict()} if self.scaler.is_enabled() else {}),
        })
        if name == "last.pt":
            self._write_config()

    def _write_config(self) -> None:
        """``config.yaml``: the settings of the run as its ``last.pt`` holds them (or, before the first, will)."""
        with atomic_output(self.save_dir / "config.yaml") as f:
            f.write(yaml.safe_dump(self.config, sort_keys=False))

    def _decoding_payload(self) -> dict:
        """What a checkpoint needs to be decoded with (``FOR_DECODING``)."""
        options = self.corpus.manifest.get("options", {})
        return {"config": dict(self.config), "model": self.model.state_dict(), "corpus": self.corpus.meta.state(),
                "vocab": {name: v.state() for name, v in self.corpus.vocabs.items()},
                **{key: options[key] for key in CORPUS_RECORDS if options.get(key)}}
