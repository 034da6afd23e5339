"""Learning-rate schedules: one interface, with a hook after each update and one after each validation.

- ``decay-on-worse``: multiply the rate by ``lr_decay`` when the validation metric is worse
  than at the previous validation (target-target-attention.txt §3.1 halves it when BLEU drops);
  an equal score is not worse.
- ``inverse-sqrt``: linear warm-up over ``warmup_steps`` updates, then decay with the inverse
  square root of the step (Vaswani et al. 2017, as fairseq's ``inverse_sqrt``):
  lr_t = lr · min(t / w, sqrt(w / t)).
"""
from __future__ import annotations

import math
from typing import Optional


def is_better(metric: str, a: float, b: Optional[float]) -> bool:
    """Whether validation value ``a`` beats ``b`` (None: nothing yet): perplexity lower, the others (BLEU, chrF,
    chrF++) higher."""
    return b is None or (a < b if metric == "ppl" else a > b)


class Schedule:
    """The learning rate as training goes: :meth:`on_update` after each update, :meth:`on_validation`
    after each validation; both return the rate to use from then on. :meth:`state` is what a
    checkpoint keeps and :meth:`load_state` restores."""

    sets_every_update = False  # whether :meth:`on_update` sets the rate (so no other value can be imposed)

    def __init__(self, lr: float, config: dict):
        self.base_lr, self.lr = lr, lr

    def on_update(self, step: int) -> float:
        return self.lr

    def on_validation(self, value: float) -> float:
        return self.lr

    def state(self) -> dict:
        return {"lr": self.lr}

    def load_state(self, state: dict) -> None:
        self.lr = state["lr"]


class DecayOnWorse(Schedule):
    """``decay-on-worse``: the rate times ``lr_decay`` after a validation worse than the previous one."""

    def __init__(self, lr: float, config: dict):
        super().__init__(lr, config)
        self.metric, self.decay, self.min_lr = config["decay_metric"], config["lr_decay"], config["min_lr"]
        self.last: Optional[float] = None

    def on_validation(self, value: float) -> float:
        if self.last is not None and is_better(self.metric, self.last, value):  # worse than the last one
            self.lr = max(self.min_lr, self.lr * self.decay)
        self.last = value
        return self.lr

    def state(self) -> dict:
        return {"lr": self.lr, "last": self.last}

    def load_state(self, state: dict) -> None:
        self.lr, self.last = state["lr"], state.get("last")


class InverseSqrt(Schedule):
    """``inverse-sqrt``: linear warm-up over ``warmup_steps`` updates, then 1/sqrt(step)."""

    sets_every_update = True

    def __init__(self, lr: float, config: dict):
        super().__init__(lr, config)
        self.warmup = max(1, config["warmup_steps"])
        self.lr = self.at(1)

    def at(self, step: int) -> float:
        """lr · min(t / w, sqrt(w / t)) for the update numbered ``step`` (from 1)."""
        t = max(1, step)
        return self.base_lr * min(t / self.warmup, math.sqrt(self.warmup / t))

    def on_update(self, step: int) -> float:
        self.lr = self.at(step + 1)  # the rate of the next update
        return self.lr


SCHEDULES: dict[str, type[Schedule]] = {"decay-on-worse": DecayOnWorse, "inverse-sqrt": InverseSqrt}


def make_schedule(config: dict, lr: float) -> Schedule:
    """The schedule named by ``config['lr_schedule']``, starting from ``lr``."""
    return SCHEDULES[config["lr_schedule"]](lr, config)
