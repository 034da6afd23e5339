"""The decoding library: settings checked before loading, a decoder that loads once and translates as the CLI does."""
import re
from pathlib import Path

import numpy as np
import pytest

from nmtkit.decoding import Decoder, DecodeSettings, encoded
from nmtkit.errors import NmtkitError
from tests.conftest import run

LINES = ["forty-two", "", "seven hundred", "one"]


def test_a_decoder_translates_as_translate_does_call_after_call(trained_ckpt):
    cli = run(["translate", "-m", trained_ckpt, "--beam", 3], input="\n".join(LINES) + "\n").stdout.splitlines()
    decoder = Decoder(DecodeSettings(models=(str(trained_ckpt),), beam=3))
    first = decoder.translate_texts(LINES)
    again = decoder.translate_texts(LINES[::-1])
    assert [r.texts[0] for r in first] == cli and [r.texts[0] for r in again] == cli[::-1]
    assert [r.index for r in first] == [0, 1, 2, 3] and first[1].lengths == [0]
    assert all(c < 0 for r in first if r.texts[0] for c in r.confidence)


def test_an_ensemble_of_two_copies_decodes_as_one_model(trained_ckpt):
    one = Decoder(DecodeSettings(models=(str(trained_ckpt),), beam=3, n_best=2)).translate_texts(LINES)
    two = Decoder(DecodeSettings(models=(str(trained_ckpt),) * 2, weights=(2.0, 1.0), beam=3, n_best=2))
    both = two.translate_texts(LINES)
    assert [r.texts for r in both] == [r.texts for r in one]
    assert [r.logprobs for r in both] == [pytest.approx(r.logprobs, abs=2e-4) for r in one]


@pytest.mark.parametrize("settings, message", [
    ({"n_best": 6}, "--n-best: expects at most the beam size (5), got 6"),
    ({"sampling": True, "n_best": 2}, "--n-best: --sampling draws one output a line"),
    ({"weights": (1.0,)}, "--weights: weighs the models of an ensemble"),
    ({"weights": ("a", "b"), "models": ("a.pt", "b.pt")}, "--weights: expects a list of numbers, one per model, got"),
    ({"weights": "1,2", "models": ("a.pt", "b.pt")}, "--weights: expects a list of numbers, one per model, got '1,2'"),
    ({"attention_model": 2}, "--attention-model: expects 1 to 1"),
    ({"dictionary": "d.txt"}, "--dict goes with --replace-unk"),
    ({"edit_cost": 1.0, "shortlist": "lex"}, "--edit-cost: post-editing models decode without --shortlist"),
    ({"prefix": True, "replace_unk": True}, "--prefix-file: its words are yours, and --replace-unk would put source"),
    ({"constraints": True, "replace_unk": True}, "--constraints: its words are yours, and --replace-unk would"),
    ({"models": ()}, "-m/--model: expects a list of checkpoints (one: a model; several: an ensemble), got ()"),
    ({"models": "m.pt"}, "-m/--model: expects a list of checkpoints"),
    ({"device": "gpu"}, "--device: expects auto, cpu, mps, cuda or cuda:N, got 'gpu'"),
    ({"sampling": "no"}, "sampling: expects True or False, got 'no'"),
    ({"beam": 0}, "--beam: expects an integer in [1, 1000], got 0"),  # (as the CLI's options: nmtkit.config.DECODING)
    ({"temperature": 0.0}, "--temperature: expects a number in (0, 100], got 0.0"),
    ({"batch_size": 2.5}, "--batch-size: expects an integer >= 1, got 2.5"),
    ({"max_len_a": float("nan")}, "--max-len-a: expects a number in [0, 100], got nan"),
    ({"threads": True}, "--threads: expects an integer in [0, 1024], got True"),
    ({"temperature": None}, "--temperature: expects a number in (0, 100], got None"),  # (None: only where optional)
    ({"beam": np.int64(0)}, "--beam: expects an integer in [1, 1000], got np.int64(0)"),
    ({"precision": "fp16"}, "--precision: 'fp16' is not one of fp32, bf16, int8"),  # (it was found after loading)
    ({"shortlist": 5}, "shortlist: expects a file's path, got 5"),
    ({"replace_unk": True, "dictionary": ["lex.txt"]}, "dictionary: expects a file's path, got ['lex.txt']"),
])
def test_settings_that_do_not_go_together_are_one_line_before_loading(settings, message):
    with pytest.raises(NmtkitError, match=re.escape(message)) as e:
        Decoder(DecodeSettings(**{"models": ("missing.pt",), **settings}))
    assert e.value.exit_code == 2


def test_numbers_of_numpy_paths_and_no_limit_where_a_setting_may_have_none_are_taken():
    DecodeSettings((Path("model.pt"),), beam=np.int64(4), length_penalty=np.float32(0.6), max_input_len=None,
                   attention_layer=None).check()


def test_bf16_autocast_stays_in_the_decoder_while_its_results_are_read(trained_ckpt):
    """(the caller's own code ran in bfloat16 while it held a result, and two generators taking turns left autocast
    on for the thread after both ended)"""
    import torch

    decoder = Decoder(DecodeSettings(models=(str(trained_ckpt),), precision="bf16"))
    x = torch.ones(4, 4)
    results = decoder.translate(decoder.lines(LINES))
    first = next(results)
    assert (x @ x).dtype == torch.float32 and first.texts
    a, b = decoder.translate(decoder.lines(LINES)), decoder.translate(decoder.lines(LINES))
    next(a), next(b), list(a), list(b), list(results)
    assert not torch.is_autocast_enabled("cpu") and (x @ x).dtype == torch.float32


def test_texts_and_guides_given_as_generators_are_read_once(trained_ckpt):
    """(the type check read a generator to its end, and every line was dropped without a word)"""
    decoder = Decoder(DecodeSettings(models=(str(trained_ckpt),), prefix=True))
    assert decoder.lines(t for t in ["one", "two"]) == [(b"one", b""), (b"two", b"")]
    assert decoder.lines(iter(["one"]), (p for p in ["eins"])) == [(b"one", b"eins")]
    plain = Decoder(DecodeSettings(models=(str(trained_ckpt),)))
    assert [r.texts for r in plain.translate_texts(t for t in LINES)] == [r.texts for r in plain.translate_texts(LINES)]


def test_lines_of_text_given_to_translate_are_a_type_error(trained_ckpt):
    """(a str was read as one field per character: a warning and an empty result, or a crash in line_text)"""
    decoder = Decoder(DecodeSettings(models=(str(trained_ckpt),)))
    for lines, got in ((["six"], "str"), (["a"], "str"), ([(b"six", "x")], "tuple of bytes, str")):
        with pytest.raises(TypeError, match=re.escape(f"a line to decode is its bytes, or one bytes field per input; "
                                                      f"got {got} (Decoder.lines and Decoder.translate_texts take text)")):
            list(decoder.translate(lines))


@pytest.mark.parametrize("changed, message", [
    (dict(beam_size=0), "options.beam_size: expects an integer in [1, 1000], got 0"),
    (dict(batch_size=0), "options.batch_size: expects an integer >= 1, got 0"),
    (dict(beam_size=1, n_best=3), "options.n_best: expects at most the beam size (1), got 3"),
    (dict(length_penalty=float("nan")), "options.length_penalty: expects")])
def test_search_options_of_one_call_are_checked_as_the_settings_are(trained_ckpt, changed, message):
    """(a beam of 0 searched greedily, a batch of 0 failed in range(), an n-best above the beam gave an empty line
    three entries and the others one)"""
    from dataclasses import replace

    decoder = Decoder(DecodeSettings(models=(str(trained_ckpt),)))
    with pytest.raises(NmtkitError, match=re.escape(message)) as e:
        list(decoder.translate(decoder.lines(LINES), options=replace(decoder.options, **changed)))
    assert e.value.exit_code == 2
    fine = replace(decoder.options, beam_size=2, n_best=2)
    assert all(len(r.texts) == 2 for r in decoder.translate(decoder.lines(LINES), options=fine))


def test_a_line_of_several_inputs_is_one_field_each():
    assert encoded("a b\tc", 2) == (b"a b", b"c") and encoded(["a b", "c\td"], 2) == (b"a b", b"c\td")
    assert encoded("a\tb", 1) == b"a\tb"


def test_lines_name_the_item_that_cannot_be_read(trained_ckpt):
    plain = Decoder(DecodeSettings(models=(str(trained_ckpt),)))
    prefixed = Decoder(DecodeSettings(models=(str(trained_ckpt),), prefix=True))
    assert prefixed.lines(["one", "two"], ["eins", ""]) == [(b"one", b"eins"), (b"two", b"")]
    assert prefixed.lines(["one"]) == [(b"one", b"")] and plain.lines(["one"]) == [b"one"]
    assert plain.lines(["\ufeffone", "\ufefftwo"]) == [b"one", b"two"]  # (a byte-order mark, wherever the text is)
    for decoder, texts, prefixes, message in [
            (plain, ["one"], ["eins"], "prefix: this model decodes without prefixes"),
            (prefixed, ["one", "two"], ["eins"], "prefix: 1 prefixes for 2 lines"),
            (prefixed, ["one", "t\udc80"], None, "text.1: not valid Unicode"),
            (prefixed, ["one"], ["\ud800"], "prefix.0: not valid Unicode"),
            (plain, [["one", "two"]], None, "text.0: 2 inputs; this model reads 1"),
            (plain, "six", None, "text: expects a list with one item per line, got str"),
            (plain, ["one", None], None, "text.1: expects a string, or a list of strings (one per input), got NoneType"),
            (plain, [[1]], None, "text.0: expects a string, or a list of strings (one per input), got list"),
            (prefixed, ["one", "two"], ["eins", 2], "prefix.1: expects a string, got int")]:
        with pytest.raises(NmtkitError, match=re.escape(message)):
            decoder.lines(texts, prefixes)
    constrained = Decoder(DecodeSettings(models=(str(trained_ckpt),), constraints=True))
    for constraints, message in ((["und", "tausend"], "constraints.0: expects a list of strings (target phrases), "
                                                      "got str"), ("und", "constraints: expects a list with one item")):
        with pytest.raises(NmtkitError, match=re.escape(message)):
            constrained.lines(["one", "two"], None, constraints)


def test_warnings_about_a_prefix_or_constraints_name_them_by_the_decoder_not_by_translate_options(trained_ckpt, capsys):
    settings = DecodeSettings(models=(str(trained_ckpt),), prefix=True, constraints=True)
    for decoder, named in ((Decoder(settings, name="batch of tiny"), ("prefix of batch of tiny", "constraints of batch of tiny")),
                           (Decoder(settings, guide_names=("p.txt", "c.jsonl")), ("p.txt", "c.jsonl"))):
        decoder.translate_texts(["one", "two"], ["", "zzz"], [["qqq"], []])
        err = capsys.readouterr().err
        assert f"{named[0]}:2: 'zzz' not in the target vocabulary" in err
        assert f"{named[1]}:1: 'qqq' not in the target vocabulary" in err and "--" not in err


def test_a_result_says_whether_its_line_was_cut_at_the_length_limit(trained_ckpt):
    decoder = Decoder(DecodeSettings(models=(str(trained_ckpt),), max_input_len=3))
    results = decoder.translate_texts(["forty-two", "seven hundred forty-two thousand one", "", "one two three"])
    assert [r.truncated for r in results] == [False, True, False, False]
    again = decoder.translate_texts(["one two three four"])  # (counted per call)
    assert again[0].truncated and decoder.source.truncated == 2


def test_a_result_says_whether_its_line_could_not_be_read(trained_ckpt):
    """Each call's own lines: the decoder's ``source.invalid`` numbers them from 1 within each call, so a line 2
    unusable in two calls is listed there once."""
    decoder = Decoder(DecodeSettings(models=(str(trained_ckpt),)))
    for _ in range(2):
        results = list(decoder.translate([b"one", b"tw\xffo", b"", b"three"]))
        assert [r.unusable for r in results] == [False, True, False, False]
        assert results[1].texts == [""] and results[1].flags() == {"unusable": True} and results[2].flags() == {}
    assert decoder.source.invalid == [2]
