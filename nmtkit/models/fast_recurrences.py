"""An accelerator: recurrences as autograd functions with hand-written backward passes through
time, for the encoders' GRU and LSTM layers and RNNSearch's attentive GRU decoder.

They compute exactly what the modules' own step-by-step code computes (tests pin values and
gradients to autograd's), faster. Each says which configurations it covers
(:func:`covers_decoder`); everything else runs the modules' autograd steps.

Autograd over per-step operations spends its time on bookkeeping rather than arithmetic:
the weight gradient as two small matrix products per step and weight, an accumulation
into the full-size input gradient at every step, dozens of tiny graph nodes per step. Here
the forward passes write every step into preallocated buffers, the backward passes keep
only what must be sequential in the loop, and every weight gradient is one large matrix
product at the end.

GRUs use the cuDNN/PyTorch layout, gates in (r, z, n) order:

    r, z = sigmoid(gi_rz + gh_rz),  n = tanh(gi_n + r gh_n),  h' = (1 - z) n + z h

with ``gi`` the input and ``gh`` the recurrent gate pre-activations (biases included).
"""
from __future__ import annotations

import functools
from typing import Optional

import torch
from torch import nn
from torch.autograd.function import once_differentiable

from nmtkit.models.attention import MLPAttention, TargetAttention
from nmtkit.models.cells import Cell, GRUCell

_softmax_backward = torch._softmax_backward_data
_sigmoid_backward = torch.ops.aten.sigmoid_backward.grad_input  # grad y (1 - y), into grad_input
_tanh_backward = torch.ops.aten.tanh_backward.grad_input  # grad (1 - y^2), into grad_input


def _gru_update(gi: torch.Tensor, gh: torch.Tensor, h: torch.Tensor, rz: torch.Tensor, n: torch.Tensor,
                h_new: torch.Tensor) -> None:
    """One GRU update into the buffers ``rz`` (gates r and z), ``n`` and ``h_new``."""
    H = h.size(-1)
    torch.add(gi[..., :2 * H], gh[..., :2 * H], out=rz).sigmoid_()
    r, z = rz.chunk(2, dim=-1)
    torch.addcmul(gi[..., 2 * H:], r, gh[..., 2 * H:], out=n).tanh_()
    torch.lerp(n, h, z, out=h_new)  # n + z (h - n)


def _gru_backward(dh_new: torch.Tensor, h: torch.Tensor, rz: torch.Tensor, n: torch.Tensor, gh_n: torch.Tensor,
                  dgi: torch.Tensor, dgh: torch.Tensor) -> torch.Tensor:
    """Backward of :func:`_gru_update`: writes dL/dgi and dL/dgh, returns the direct part z dL/dh'."""
    H = h.size(-1)
    r, z = rz.chunk(2, dim=-1)
    dgi_r, dgi_z, dgi_n = dgi.split(H, dim=-1)
    _tanh_backward(torch.addcmul(dh_new, dh_new, z, value=-1), n, grad_input=dgi_n)
    _sigmoid_backward(dgi_n * gh_n, r, grad_input=dgi_r)
    _sigmoid_backward(dh_new * (h - n), z, grad_input=dgi_z)
    dgh[..., :2 * H] = dgi[..., :2 * H]
    torch.mul(dgi_n, r, out=dgh[..., 2 * H:])
    return dh_new * z


class MaskedGRU(torch.autograd.Function):
    """GRUs over ``D`` independent sequences at once: ``h_t = m_t GRU(gi_t, h_{t-1})``, ``h_0 = 0``.

    ``gi [T, D, B, 3H]``, ``mask [T, D, B, 1]`` (1 at real tokens, 0 resets the state),
    ``hidden_w [D, 3H, H]``, ``hidden_b [D, 3H]``; returns h_1..h_T ``[T, D, B, H]``.
    """

    @staticmethod
    def forward(ctx, gi: torch.Tensor, mask: torch.Tensor, hidden_w: torch.Tensor,
                hidden_b: torch.Tensor) -> torch.Tensor:
        T, D, B, H3 = gi.shape
        states = gi.new_zeros(T + 1, D, B, H3 // 3)
        gh = torch.empty_like(gi)
        rz = gi.new_empty(T, D, B, 2 * H3 // 3)
        n = torch.empty_like(states[1:])
        for t in range(T):
            torch.baddbmm(hidden_b.unsqueeze(1), states[t], hidden_w.transpose(1, 2), out=gh[t])
            _gru_update(gi[t], gh[t], states[t], rz[t], n[t], states[t + 1])
            states[t + 1].mul_(mask[t])
        ctx.save_for_backward(mask, hidden_w, states, gh, rz, n)
        return states[1:]

    @staticmethod
    @once_differentiable
    def backward(ctx, d_states: torch.Tensor):
        mask, hidden_w, states, gh, rz, n = ctx.saved_tensors
        T, D, B, H = n.shape
        d_gi, d_gh = torch.empty_like(gh), torch.empty_like(gh)
        dh = d_states.new_zeros(D, B, H)
        for t in reversed(range(T)):
            dh = (dh + d_states[t]) * mask[t]
            dh = _gru_backward(dh, states[t], rz[t], n[t], gh[t, ..., 2 * H:], d_gi[t], d_gh[t])
            dh = torch.baddbmm(dh, d_gh[t], hidden_w)
        flat_dgh = d_gh.transpose(0, 1).reshape(D, T * B, 3 * H)
        d_hidden_w = torch.bmm(flat_dgh.transpose(1, 2), states[:-1].transpose(0, 1).reshape(D, T * B, H))
        return d_gi, None, d_hidden_w, flat_dgh.sum(1)


class MaskedLSTM(torch.autograd.Function):
    """LSTMs over ``D`` independent sequences at once: ``(h_t, c_t) = m_t LSTM(gi_t, h_{t-1}, c_{t-1})``,
    ``h_0 = c_0 = 0``, gates in PyTorch's (i, f, g, o) order:

        i, f, o = sigmoid(.),  g = tanh(.),  c_t = f c_{t-1} + i g,  h_t = o tanh(c_t)

    ``gi [T, D, B, 4H]`` holds the input products with both biases, ``mask [T, D, B, 1]`` (1 at
    real tokens, 0 resets the state), ``hidden_w [D, 4H, H]``; returns h_1..h_T and c_1..c_T
    ``[T, D, B, H]``.
    """

    @staticmethod
    def forward(ctx, gi: torch.Tensor, mask: torch.Tensor, hidden_w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        T, D, B, H4 = gi.shape
        H = H4 // 4
        h = gi.new_zeros(T + 1, D, B, H)
        c = torch.zeros_like(h)
        act = torch.empty_like(gi)  # the gates after their nonlinearities
        tanh_c = torch.empty_like(h[1:])
        for t in range(T):
            torch.baddbmm(gi[t], h[t], hidden_w.transpose(1, 2), out=act[t])
            act[t, ..., :2 * H].sigmoid_()
            act[t, ..., 2 * H:3 * H].tanh_()
            act[t, ..., 3 * H:].sigmoid_()
            i, f, g, o = act[t].split(H, dim=-1)
            torch.mul(f, c[t], out=c[t + 1]).addcmul_(i, g).mul_(mask[t])
            torch.mul(o, torch.tanh(c[t + 1], out=tanh_c[t]), out=h[t + 1])
        ctx.save_for_backward(mask, hidden_w, h, c, act, tanh_c)
        return h[1:], c[1:]

    @staticmethod
    @once_differentiable
    def backward(ctx, d_h: torch.Tensor, d_c: torch.Tensor):
        mask, hidden_w, h, c, act, tanh_c = ctx.saved_tensors
        T, D, B, H = tanh_c.shape
        d_gates = torch.empty_like(act)
        dh, dc = d_h.new_zeros(D, B, H), d_h.new_zeros(D, B, H)
        for t in reversed(range(T)):
            dh = (dh + d_h[t]) * mask[t]
            i, f, g, o = act[t].split(H, dim=-1)
            di, df, dg, do = d_gates[t].split(H, dim=-1)
            _sigmoid_backward(dh * tanh_c[t], o, grad_input=do)
            dc = torch.ops.aten.tanh_backward(dh * o, tanh_c[t]).addcmul_(dc + d_c[t], mask[t])
            _sigmoid_backward(dc * g, i, grad_input=di)
            _sigmoid_backward(dc * c[t], f, grad_input=df)
            _tanh_backward(dc * i, g, grad_input=dg)
            dc = dc * f
            dh = torch.bmm(d_gates[t], hidden_w)
        flat = d_gates.transpose(0, 1).reshape(D, T * B, 4 * H)
        return d_gates, None, torch.bmm(flat.transpose(1, 2), h[:-1].transpose(0, 1).reshape(D, T * B, H))


def in_one_dtype(function, *args):
    """Apply an autograd function outside autocast, floating inputs promoted to one dtype (the
    hand-written passes assume one; under --amp that is float32 while the matrix products around
    them still run in half precision)."""
    is_float = [torch.is_tensor(a) and a.is_floating_point() for a in args]
    dtype = functools.reduce(torch.promote_types, [a.dtype for a, f in zip(args, is_float) if f])
    with torch.autocast(args[0].device.type, enabled=False):
        return function.apply(*(a.to(dtype) if f else a for a, f in zip(args, is_float)))


class AttentiveGRU(torch.autograd.Function):
    """All decoder steps of RNNSearch, time-major, optionally with target attention: see :func:`attentive_gru`.

    The attention energies use tanh(x) = 2 sigmoid(2x) - 1 (sigmoid is several times faster
    than tanh on CPU), and drop the constant -sum(v) this adds to every score, to which the
    softmax is invariant: e_ij + sum(v) = v^T (2 sigmoid(2 (W s_{i-1} + U h_j))). The
    backward pass recomputes the sigmoids rather than keep T copies of ``[B, S, A]``.

    Target attention (target-target-attention.txt Eq. 6-7) attends from s_{i-1} over the states
    s_1..s_{i-1} already computed, with keys U_d s_t + b_d stored as each state appears. In
    the backward pass the gradient of s_t collects, besides the recurrence, what every later
    step sent back through its value and its key; going backwards in time, all of that has
    arrived by the time step t is reached.
    """

    @staticmethod
    def forward(ctx, gi_emb: torch.Tensor, s0: torch.Tensor, keys: torch.Tensor, memory: torch.Tensor,
                mask: torch.Tensor, hidden_w: torch.Tensor, hidden_b: torch.Tensor, ctx_w: torch.Tensor,
                v: torch.Tensor, tq_w: Optional[torch.Tensor] = None, tkey_w: Optional[torch.Tensor] = None,
                tkey_b: Optional[torch.Tensor] = None, tv: Optional[torch.Tensor] = None,
                tgate_w: Optional[torch.Tensor] = None):
        T, B, H3 = gi_emb.shape
        H = H3 // 3
        S, A = keys.size(1), keys.size(2)
        target = tq_w is not None
        states = s0.new_empty(T + 1, B, H)  # s_0 .. s_T
        states[0] = s0
        proj = s0.new_empty(T, B, H3 + A)  # [gate products; W s_{i-1}] of every step
        alphas = keys.new_empty(B, T, S)
        contexts = memory.new_empty(T, B, memory.size(2))
        rz = s0.new_empty(T, B, 2 * H)
        n = torch.empty_like(states[1:])
        keys2 = keys * 2
        sig = torch.empty_like(keys)  # sigmoid(2 (W s_{i-1} + U h_j)) of one step
        pad = keys.new_zeros(B * S).masked_fill_(~mask.view(-1), float("-inf"))
        if target:
            At = tq_w.size(0)
            tq = s0.new_empty(T, B, At)  # W_d s_{i-1}
            tmem = s0.new_empty(B, T, H)  # s_1 .. s_T, batch-first: the target memory
            tkeys2 = s0.new_empty(B, T, At)  # 2 (U_d s_t + b_d)
            betas = s0.new_zeros(B, T, T)
            tcontexts = s0.new_zeros(T, B, H)
            tv2 = 2 * tv.view(At)
        for i in range(T):
            torch.addmm(hidden_b, states[i], hidden_w.t(), out=proj[i])
            gh, q = proj[i].split([H3, A], dim=-1)
            torch.add(keys2, q.unsqueeze(1), alpha=2, out=sig).sigmoid_()
            scores = torch.addmv(pad, sig.view(B * S, A), 2 * v.view(A)).view(B, S)  # e_ij + sum(v); -inf at padding
            alphas[:, i] = torch.softmax(scores, dim=-1)  # Eq. 4
            torch.bmm(alphas[:, i].unsqueeze(1), memory, out=contexts[i].unsqueeze(1))  # c_i, Eq. 5
            gi = torch.addmm(gi_emb[i], contexts[i], ctx_w.t())  # [E y_{i-1}; c_i] -> gates
            if target:
                torch.mm(states[i], tq_w.t(), out=tq[i])
                if i > 0:  # Eq. 6-7 over s_1..s_{i-1} (none at the first step)
                    tsig = torch.add(tkeys2[:, :i], tq[i].unsqueeze(1), alpha=2).sigmoid_()
                    betas[:, i, :i] = torch.softmax(tsig @ tv2, dim=-1)
                    torch.bmm(betas[:, i, :i].unsqueeze(1), tmem[:, :i], out=tcontexts[i].unsqueeze(1))
                    gi.addmm_(tcontexts[i], tgate_w.t())
            _gru_update(gi, gh, states[i], rz[i], n[i], states[i + 1])
            if target:  # M_tgt gains s_i and its key
                tmem[:, i] = states[i + 1]
                torch.addmm(tkey_b, states[i + 1], tkey_w.t(), beta=2, alpha=2, out=tkeys2[:, i])
        saved = [states, proj, keys2, alphas, contexts, rz, n, memory, hidden_w, ctx_w, v]
        if target:
            saved += [tq, tmem, tkeys2, betas, tcontexts, tq_w, tkey_w, tv, tgate_w]
            ctx.save_for_backward(*saved)
            return states[1:], contexts, alphas, tcontexts, betas
        ctx.save_for_backward(*saved)
        return states[1:], contexts, alphas

    @staticmethod
    @once_differentiable
    def backward(ctx, d_states: torch.Tensor, d_contexts: torch.Tensor, d_alphas: torch.Tensor,
                 d_tcontexts: Optional[torch.Tensor] = None, d_betas: Optional[torch.Tensor] = None):
        saved = ctx.saved_tensors
        states, proj, keys2, alphas, contexts, rz, n, memory, hidden_w, ctx_w, v = saved[:11]
        target = len(saved) > 11
        T, B, H = n.shape
        S, A = keys2.size(1), keys2.size(2)
        d_proj = torch.empty_like(proj)
        d_gi = proj.new_empty(T, B, 3 * H)
        d_ctx = torch.empty_like(contexts)
        d_keys = torch.zeros_like(keys2)  # sum_i de_ij sigmoid'(.), times 4 v at the end
        d_v = keys2.new_zeros(A)  # sum_i de_ij sigmoid(.), times 2 at the end
        de_sum = keys2.new_zeros(B, S)  # sum_i de_ij, for the -sum(v) term of e_ij
        sig = torch.empty_like(keys2)
        v4 = 4 * v.view(A)
        if target:
            tq, tmem, tkeys2, betas, tcontexts, tq_w, tkey_w, tv, tgate_w = saved[11:]
            At = tq.size(2)
            tv4 = 4 * tv.view(At)
            d_tq = torch.zeros_like(tq)
            d_tmem = torch.zeros_like(tmem)  # dL/ds_t through the values of later steps' target contexts
            d_tkeys = torch.zeros_like(tkeys2)  # dL/d(U_d s_t + b_d) from later steps' scores
            d_tv = tv.new_zeros(At)
            d_tc = torch.empty_like(tcontexts)
        ds = d_states.new_zeros(B, H)
        for i in reversed(range(T)):
            ds = ds + d_states[i]
            if target:  # s_{i+1} as target memory of the later steps: its value and its key
                ds = ds + d_tmem[:, i]
                ds.addmm_(d_tkeys[:, i], tkey_w)
            ds = _gru_backward(ds, states[i], rz[i], n[i], proj[i, :, 2 * H:3 * H], d_gi[i], d_proj[i, :, :3 * H])
            # c_i = sum_j alpha_ij h_j enters the gates
            dc = torch.addmm(d_contexts[i], d_gi[i], ctx_w, out=d_ctx[i])
            dalpha = torch.baddbmm(d_alphas[:, i].unsqueeze(1), dc.unsqueeze(1), memory.transpose(1, 2)).squeeze(1)
            de = _softmax_backward(dalpha, alphas[:, i], -1, dalpha.dtype)  # dL/de_ij
            de_sum += de
            torch.add(keys2, proj[i, :, 3 * H:].unsqueeze(1), alpha=2, out=sig).sigmoid_()
            d_v.addmv_(sig.view(B * S, A).t(), de.view(-1))
            torch.addcmul(sig, sig, sig, value=-1, out=sig)  # sigmoid' = y (1 - y)
            d_keys.addcmul_(de.unsqueeze(-1), sig)
            torch.mul(torch.bmm(de.unsqueeze(1), sig).squeeze(1), v4, out=d_proj[i, :, 3 * H:])
            # s_{i-1} enters the update, the gate products and the attention query
            ds = torch.addmm(ds, d_proj[i], hidden_w)
            if target:
                dtc = torch.addmm(d_tcontexts[i], d_gi[i], tgate_w, out=d_tc[i])
                if i > 0:
                    beta = betas[:, i, :i]
                    d_tmem[:, :i].addcmul_(beta.unsqueeze(-1), dtc.unsqueeze(1))  # value path of s_1..s_{i-1}
                    dbeta = torch.baddbmm(d_betas[:, i, :i].unsqueeze(1), dtc.unsqueeze(1),
                                          tmem[:, :i].transpose(1, 2)).squeeze(1)
                    dte = _softmax_backward(dbeta, beta, -1, dbeta.dtype)
                    tsig = torch.add(tkeys2[:, :i], tq[i].unsqueeze(1), alpha=2).sigmoid_()
                    d_tv.addmv_(tsig.reshape(-1, At).t(), dte.reshape(-1))
                    tsig.mul_(1 - tsig).mul_(dte.unsqueeze(-1)).mul_(tv4)  # dL/d(key + query) per memory slot
                    d_tkeys[:, :i] += tsig
                    torch.sum(tsig, 1, out=d_tq[i])
                    ds.addmm_(d_tq[i], tq_w)
        flat_dp = d_proj.view(T * B, -1)
        d_hidden_w = flat_dp.t() @ states[:-1].reshape(T * B, H)
        d_ctx_w = d_gi.view(T * B, -1).t() @ contexts.view(T * B, -1)
        d_memory = torch.bmm(alphas.transpose(1, 2), d_ctx.transpose(0, 1))
        d_v = (2 * d_v - de_sum.sum()).view_as(v)
        grads = (d_gi, ds, d_keys.mul_(v4), d_memory, None, d_hidden_w, flat_dp.sum(0), d_ctx_w, d_v)
        if not target:
            return grads + (None,) * 5
        flat_tk = d_tkeys.reshape(B * T, At)
        return grads + (d_tq.view(T * B, At).t() @ states[:-1].reshape(T * B, H),  # W_d
                        flat_tk.t() @ tmem.reshape(B * T, H), flat_tk.sum(0),  # U_d, b_d
                        (2 * d_tv).view_as(tv), d_gi.view(T * B, -1).t() @ tcontexts.view(T * B, H))  # v_d, C^d


def covers_decoder(cell: Cell, attention: nn.Module, target_attention: Optional[nn.Module]) -> bool:
    """Whether :func:`attentive_gru` computes a decoder of these parts: a :class:`GRUCell` whose recurrent
    product also gives the query of an :class:`MLPAttention` over the source, and optionally a
    :class:`TargetAttention`; their contexts (and no others) in the cell's gates."""
    contexts = {"source"} | ({"target"} if target_attention is not None else set())
    return (type(cell) is GRUCell and cell.query_size > 0 and set(cell.contexts) == contexts
            and type(attention) is MLPAttention and attention.query is None
            and (target_attention is None or type(target_attention) is TargetAttention))


def attentive_gru(gi_emb: torch.Tensor, s0: torch.Tensor, keys: torch.Tensor, memory: torch.Tensor,
                  mask: torch.Tensor, hidden_w: torch.Tensor, hidden_b: torch.Tensor, ctx_w: torch.Tensor,
                  v: torch.Tensor, target: Optional[tuple[torch.Tensor, ...]] = None) -> tuple[torch.Tensor, ...]:
    """Run the RNNSearch decoder over all target steps.

    ``gi_emb [T, B, 3H]`` is the embedding part of the GRU gates, ``s0 [B, H]`` the initial
    state, ``keys [B, S, A]`` U h_j, ``memory [B, S, C]`` h_j, ``mask [B, S]`` True at real
    tokens; ``hidden_w [3H + A, H]`` / ``hidden_b`` map s_{i-1} to the recurrent gate products
    and W s_{i-1}, ``ctx_w [3H, C]`` maps c_i to the gates, ``v [1, A]`` scores the attention.
    Returns the states s_1..s_T ``[T, B, H]``, contexts ``[T, B, C]`` and weights ``[B, T, S]``.

    ``target`` = (W_d ``[A', H]``, U_d ``[A', H]``, b_d ``[A']``, v_d ``[1, A']``, C^d ``[3H, H]``)
    adds target attention; then the target contexts ``[T, B, H]`` and weights ``[B, T, T]``
    (row i over the i previous states) are returned too.
    """
    return in_one_dtype(AttentiveGRU, gi_emb, s0, keys, memory, mask, hidden_w, hidden_b, ctx_w, v, *(target or ()))
