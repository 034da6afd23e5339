"""Learning-rate schedules: decay on a worse validation score (never on an equal one), inverse square root."""
import math

import pytest

from nmtkit.train.schedules import SCHEDULES, DecayOnWorse, InverseSqrt, is_better

CONFIG = {"decay_metric": "bleu", "lr_decay": 0.5, "min_lr": 0.0, "warmup_steps": 4}


def test_learning_rate_halves_only_when_bleu_drops():
    s = DecayOnWorse(1.0, CONFIG)
    assert [s.on_validation(v) for v in (10.0, 12.0, 11.0, 11.5, 11.5, 11.0)] == [1.0, 1.0, 0.5, 0.5, 0.5, 0.25]


def test_an_equal_score_is_not_worse():
    s = DecayOnWorse(1.0, CONFIG)
    assert s.on_validation(7.0) == 1.0 and s.on_validation(7.0) == 1.0
    p = DecayOnWorse(1.0, {**CONFIG, "decay_metric": "ppl"})
    assert p.on_validation(9.0) == 1.0 and p.on_validation(9.0) == 1.0


def test_perplexity_is_lower_is_better_and_min_lr_is_a_floor():
    s = DecayOnWorse(1.0, {**CONFIG, "decay_metric": "ppl", "min_lr": 0.4})
    assert [s.on_validation(v) for v in (10.0, 9.0, 9.5, 9.7, 9.9)] == [1.0, 1.0, 0.5, 0.4, 0.4]
    assert is_better("ppl", 3.0, 4.0) and not is_better("bleu", 3.0, 4.0) and is_better("bleu", 1.0, None)
    assert is_better("chrf", 4.0, 3.0) and is_better("chrf++", 4.0, 3.0) and not is_better("chrf++", 3.0, 4.0)


def test_decay_state_survives_a_resume():
    s = DecayOnWorse(1.0, CONFIG)
    s.on_validation(5.0)
    r = DecayOnWorse(1.0, CONFIG)
    r.load_state(s.state())
    assert r.on_validation(4.0) == 0.5  # worse than the 5.0 before the resume


def test_inverse_sqrt_warms_up_linearly_then_decays():
    s = InverseSqrt(0.1, CONFIG)
    lrs = [s.lr] + [s.on_update(step) for step in range(1, 16)]  # the rate of updates 1..16
    assert lrs[:4] == pytest.approx([0.025, 0.05, 0.075, 0.1])
    assert lrs[15] == pytest.approx(0.1 * math.sqrt(4 / 16))
    assert all(a > b for a, b in zip(lrs[3:], lrs[4:]))
    assert s.on_validation(1.0) == s.lr  # validation does not change it


def test_every_schedule_restores_its_rate():
    for name, cls in SCHEDULES.items():
        s = cls(0.3, CONFIG)
        s.on_update(7)
        s.on_validation(5.0)
        s.on_validation(4.0)  # worse: decay-on-worse halves
        r = cls(0.3, CONFIG)
        r.load_state(s.state())
        assert r.lr == s.lr != 0.3, name
