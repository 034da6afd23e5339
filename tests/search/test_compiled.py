"""``--compile``: every architecture's decoding step compiles into graphs (not left to run uncompiled) and gives
what the model gives; ``translate --compile`` finds the outputs of ``translate``; a server's decoder compiles
before its first request, continuous batching's merged states included; no C++ compiler is a one-line error."""
import dataclasses
import functools

import pytest
import torch
import torch._inductor.config as inductor_config
from torch._inductor import cpp_builder
from torch._inductor.utils import run_and_get_code

from nmtkit.decoding import Decoder, DecodeSettings
from nmtkit.errors import NmtkitError
from nmtkit.search.compiled import Compiled
from tests.conftest import TINY_MODEL, run
from tests.models.decoding import step_by_step
from tests.models.test_contract import ARCHS, TWO_TRANSFORMERS, batch, tiny, tiny_or_ensemble


@pytest.mark.parametrize("arch", ARCHS)
def test_every_architecture_compiles_its_decoding_step_and_decodes_as_uncompiled(graphs, arch):
    made, backend = graphs
    m, b = tiny(arch), batch()
    want, want_weights = step_by_step(m, b)
    got, got_weights = step_by_step(Compiled(m, backend), b)
    assert made, "nothing was compiled"
    torch.testing.assert_close(got, want, atol=0, rtol=0)
    for step, (w, g) in enumerate(zip(want_weights, got_weights)):
        assert w.keys() == g.keys(), step
        for name in w:
            torch.testing.assert_close(g[name], w[name], atol=0, rtol=0, msg=f"attention {name} at step {step}")
    # compiled once: later steps, and another run, reuse the graphs
    count = len(made)
    step_by_step(Compiled(m, backend), b)
    assert len(made) == count


@pytest.mark.parametrize("arch,pieces", [("transformer", 1), ("ftatt-rnn", 1), (TWO_TRANSFORMERS, 2)])
def test_a_search_s_first_two_steps_run_uncompiled(graphs, arch, pieces):
    # (growing tensors of no and one position: sizes the compiler specialises, each a graph of its own); one step's
    # graph, in the pieces it breaks into (the ensemble's: at a read from the host)
    made, backend = graphs
    step_by_step(Compiled(tiny_or_ensemble(arch), backend), batch())
    assert len(made) == pieces


def test_translate_compile_finds_the_outputs_of_translate(trained_ckpt):
    lines = "".join(f"{text}\n" for text in ["forty-two", "", "one hundred and three", "seven", "sixty"])
    plain = run(["translate", "-m", trained_ckpt, "--n-best", 2], input=lines).stdout
    torch._dynamo.reset()
    # Inductor itself, which on a CPU calls the layers' products through the weights that the model packed once for
    # oneDNN's kernels: not left to plain kernels, nor packed again into each graph (Inductor's freezing)
    result, code = run_and_get_code(run, ["translate", "-m", trained_ckpt, "--n-best", 2, "--compile"], input=lines)
    torch._dynamo.reset()
    generated = "\n".join(code)
    assert "nmtkit.packed_linear" in generated and "mkldnn" not in generated and "_frozen_param" not in generated
    compiled = result.stdout
    assert len(plain.splitlines()) == len(compiled.splitlines()) == 10
    for want, got in zip(plain.splitlines(), compiled.splitlines()):
        want_fields, got_fields = want.split(" ||| "), got.split(" ||| ")
        assert got_fields[:2] == want_fields[:2]  # the line and its output
        assert float(got_fields[3]) == pytest.approx(float(want_fields[3]), abs=2e-4)  # its score, to rounding


def test_a_server_decoder_compiles_before_its_first_lines(graphs, trained_ckpt, monkeypatch):
    made, backend = graphs
    monkeypatch.setattr("nmtkit.decoding.Compiled", functools.partial(Compiled, backend=backend))
    plain = Decoder(DecodeSettings(models=(str(trained_ckpt),), prefix=True, constraints=True))
    assert not plain.warm_up() and not made  # (not compiled: nothing to do)
    decoder = Decoder(DecodeSettings(models=(str(trained_ckpt),), prefix=True, constraints=True, compile=True))
    assert decoder.warm_up() and made
    count, texts = len(made), ["forty-two", "one hundred and three", "seven"]
    results = [decoder.translate_texts(texts[:n]) for n in (1, 3)]
    greedy = dataclasses.replace(decoder.options, beam_size=1, n_best=1)  # (what a request with "beam": 1 asks)
    for n in (1, 3):
        list(decoder.translate(decoder.lines(texts[:n]), options=greedy))
    assert len(made) == count, "compiled again for lines of the shapes warmed up"
    assert [r.texts for r in results[1]] == [r.texts for r in plain.translate_texts(texts)]


@pytest.mark.parametrize("precision", ["fp32", "bf16", "int8"])
def test_only_bf16_on_a_cpu_compiles_with_the_weights_frozen_into_the_graphs(trained_ckpt, monkeypatch, precision):
    # (fp32 multiplies by the one packed copy the model holds; bf16 frozen has its weights cast once, not each step)
    frozen = []

    def backend(graph, example_inputs):
        frozen.append(inductor_config.freezing)  # (the compiler reads it as it traces)
        return graph.forward
    monkeypatch.setattr("nmtkit.decoding.Compiled", functools.partial(Compiled, backend=backend))
    torch._dynamo.reset()
    decoder = Decoder(DecodeSettings(models=(str(trained_ckpt),), precision=precision, compile=True))
    decoder.translate_texts(["forty-two", "seven"])
    torch._dynamo.reset()
    assert frozen and set(frozen) == {precision == "bf16"}
    assert not inductor_config.freezing  # (only while the step runs)


@pytest.fixture(scope="module")
def merging_ckpts(corpus_dir, tmp_path_factory):
    """Tiny models whose states merge, trained a few updates, by architecture: ftatt-rnn (target attention: its
    state grows, and merges with a target memory) and the Transformer (self-attention caches)."""
    made = {}
    for arch, size in (("ftatt-rnn", TINY_MODEL), ("transformer", ["--d-model", 32, "--ffn-size", 64, "--heads", 2,
                                                                   "--enc-layers", 1, "--dec-layers", 2])):
        save = tmp_path_factory.mktemp(arch)
        run(["train", "--data", corpus_dir, "--save-dir", save, "--arch", arch, *size, "--max-steps", 10,
             "--valid-every", 10, "--batch-size", 32])
        made[arch] = str(save / "best.pt")
    return made


@pytest.mark.parametrize("arch", ["ftatt-rnn", "transformer"])
def test_a_continuous_server_decoder_compiles_before_lines_join_its_running_search(graphs, merging_ckpts, arch,
                                                                                 monkeypatch):
    # as a server's clients keep it: three lines in flight, each line done making room for the next, which joins
    # the running search (merged states of several sentences, of caches of every length, one sentence left)
    made, backend = graphs
    monkeypatch.setattr("nmtkit.decoding.Compiled", functools.partial(Compiled, backend=backend))
    decoder = Decoder(DecodeSettings(models=(merging_ckpts[arch],), compile=True))
    assert decoder.warm_up(continuous=True)
    count, search, found = len(made), decoder.continuous(), {}
    texts = ["one hundred and three", "forty-two", "seven", "sixty", "three hundred and twelve", "nine", "eighty-one"]
    waiting = list(enumerate(texts))[::-1]
    for _ in range(3):
        tag, text = waiting.pop()
        search.add(tag, decoder.lines([text]))
    while search.busy:
        for tag, results in search.step():
            found[tag] = results[0].texts
            if waiting:
                tag, text = waiting.pop()
                search.add(tag, decoder.lines([text]))
    assert len(made) == count, "compiled again for lines joining a running search"
    alone = Decoder(DecodeSettings(models=(merging_ckpts[arch],))).translate_texts(texts)
    assert [found[tag] for tag in range(len(texts))] == [r.texts for r in alone]


def test_compile_without_a_cpp_compiler_is_a_one_line_error(trained_ckpt, monkeypatch):
    monkeypatch.setattr(inductor_config.cpp, "cxx", (None, "no-such-c++"))
    cpp_builder.cpp_compiler_search.cache_clear()
    try:
        with pytest.raises(NmtkitError, match=r"--compile: .*C\+\+ compiler.*'no-such-c\+\+'"):
            Decoder(DecodeSettings(models=(str(trained_ckpt),), compile=True))
        r = run(["translate", "-m", trained_ckpt, "--compile"], input="one\n", ok=False)
        assert r.exit_code == 2 and "install g++" in r.stderr
    finally:
        cpp_builder.cpp_compiler_search.cache_clear()


def test_a_compiled_step_may_compile_as_many_shapes_as_a_search_meets(monkeypatch):
    """PyTorch's default of 8 compilations a function, after which it runs uncompiled, is raised to 64; a user's
    higher limit is kept."""
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 8)
    Compiled(tiny("rnnsearch"), "eager")
    assert torch._dynamo.config.recompile_limit == Compiled.RECOMPILE_LIMIT == 64
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 100)
    Compiled(tiny("rnnsearch"), "eager")
    assert torch._dynamo.config.recompile_limit == 100
