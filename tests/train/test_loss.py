"""The trainer's loss for a model with a reverse decoder: the joint loss of Eq. 20, 23 and 27, label-smoothed on both
decoders, computed by hand."""
import pytest
import torch

from nmtkit.config import resolve
from nmtkit.data.batching import examples_batch
from nmtkit.data.shards import Shard
from nmtkit.data.vocab import PAD
from nmtkit.models import get_spec
from nmtkit.train.options import TRAIN_OPTIONS
from nmtkit.train.trainer import Trainer
from tests.models.test_target_rnn import reversed_by_hand

RNN = dict(emb_size=16, enc_size=16, dec_size=24)
SIZES = {"rtatt-rnn": RNN, "bitatt-rnn": RNN,
         "bitatt-transformer": dict(d_model=16, ffn_size=32, heads=2, enc_layers=1, dec_layers=1, attention_dropout=0.0)}


def trainer(corpus, save_dir, arch, smoothing, context):
    """A trainer of a tiny model without dropout, so that a second forward pass gives the same logits."""
    config = dict(arch=arch, **SIZES[arch], data=str(corpus), save_dir=str(save_dir), dropout=0.0, lr=0.03,
                  label_smoothing=smoothing, reverse_context=context, device="cpu", threads=2)
    return Trainer(resolve(TRAIN_OPTIONS + get_spec(arch).options, {}, config))


def smoothed_cross_entropy(logits, gold, eps):
    """Σ over the real tokens of (1 - ε)·(-log p(gold)) + ε·mean over the vocabulary of -log p(v): the target
    distribution (1 - ε)·onehot + ε/V, V the whole vocabulary (<pad>, <s>, </s> and <unk> included), as in Szegedy et
    al. (2016) and PyTorch's ``label_smoothing``, the convention of nmtkit.models.loss (fairseq's
    label_smoothed_cross_entropy spreads ε over the V - 1 other words instead). Padding is excluded."""
    logp = torch.log_softmax(logits.double(), -1)
    nll = -logp.gather(-1, gold.unsqueeze(-1)).squeeze(-1)
    return ((1 - eps) * nll + eps * -logp.mean(-1))[gold != PAD].sum()


@pytest.mark.parametrize("eps", [0.1, 0.0])
@pytest.mark.parametrize("arch,context", [("rtatt-rnn", "greedy"), ("bitatt-rnn", "reference"),
                                          ("bitatt-transformer", "reference")])
def test_the_loss_is_both_decoders_smoothed_cross_entropy(corpus_dir, tmp_path, arch, context, eps):
    """Trainer._loss: the forward decoder's plain negative log-likelihood (what the log reports: its perplexity is not
    smoothed) and, to minimise, its smoothed cross-entropy plus
    the reverse decoder's over ``y_T .. y_1 </s>`` (Eq. 20, 23, 27), both summed over the real target tokens, with
    the same ε; the gradient is that of the sum."""
    t = trainer(corpus_dir, tmp_path, arch, eps, context)
    shard = Shard(t.corpus.shard_paths("train")[0])
    b = examples_batch([(shard, i) for i in range(6)])
    assert len(set(b.tgt_out.ne(PAD).sum(1).tolist())) > 1  # targets of several lengths: padding to exclude
    for _ in range(4):  # far from uniform distributions, where the conventions of smoothing differ
        t._update([b])
    nll, loss = t._loss(b)
    loss.backward()
    grads = {n: None if p.grad is None else p.grad.clone() for n, p in t.model.named_parameters()}
    t.model.zero_grad()
    out = t.model(b)
    (aux_logits, _), = out.auxiliary
    forward = smoothed_cross_entropy(out.logits, b.tgt_out, eps)
    total = forward + smoothed_cross_entropy(aux_logits, reversed_by_hand(b)[1], eps)
    assert nll.item() == pytest.approx(smoothed_cross_entropy(out.logits, b.tgt_out, 0.0).item(), rel=1e-5)
    assert loss.item() == pytest.approx(total.item(), rel=1e-5)
    total.float().backward()
    for n, p in t.model.named_parameters():
        assert grads[n] is not None and torch.allclose(grads[n], p.grad, atol=1e-5), n
