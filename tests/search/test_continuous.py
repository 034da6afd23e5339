"""Continuous batching: groups of lines joining a running search get what translating them apart gives."""
import pytest

from nmtkit.decoding import Decoder, DecodeSettings

GROUPS = [["forty-two", "", "seven hundred", "one"], ["three thousand and five", "nine"], [""],
          ["twelve. six hundred and one. eight", "two"]]


def run_joining(decoder, search, groups, joins):
    """Add ``groups`` (texts) by number at the steps ``joins`` names (step -> group numbers), step until all are done; the
    results by group number, and the order in which groups came back."""
    results, order, step = {}, [], 0
    while len(results) < len(groups):
        for g in joins.get(step, []):
            search.add(g, decoder.lines(groups[g]))
        for g, lines in search.step():
            results[g] = lines
            order.append(g)
        step += 1
    assert not search.busy and not search.size
    return results, order


@pytest.mark.parametrize("settings", [dict(beam=3, n_best=2), dict(beam=4, split_long=True, max_input_len=2),
                                      dict(beam=3, prefix=True, constraints=True)])  # (lines without either)
def test_groups_joining_a_running_search_get_what_they_get_apart(trained_ckpt, settings):
    decoder = Decoder(DecodeSettings(models=(str(trained_ckpt),), **settings))
    search = decoder.continuous()
    assert search is not None
    results, order = run_joining(decoder, search, GROUPS, {0: [0], 2: [1, 2], 3: [3]})
    for g, lines in enumerate(GROUPS):
        apart = decoder.translate_texts(lines)
        assert [r.texts for r in results[g]] == [r.texts for r in apart], f"group {g}"
        assert [r.scores for r in results[g]] == [pytest.approx(r.scores, abs=1e-4) for r in apart]
        assert [(r.index, r.lengths, r.truncated) for r in results[g]] == [(r.index, r.lengths, r.truncated)
                                                                            for r in apart]
    assert order.index(2) < order.index(0)  # (a group of empty lines is back at the next step)


def test_a_line_with_a_prefix_or_constraints_is_refused_not_searched_without_them(trained_ckpt):
    decoder = Decoder(DecodeSettings(models=(str(trained_ckpt),), beam=3, prefix=True, constraints=True))
    search = decoder.continuous()
    for prefixes, constraints in (([""], [["sieben"]]), (["sieben"], [[]])):
        with pytest.raises(ValueError, match="line 0 of the group has a target prefix or constraints"):
            search.add("g", decoder.lines(["seven"], prefixes, constraints))
    assert not search.busy and not search.size
    search.add("g", decoder.lines(["seven"], [""], [[]]))  # (neither: it joins)
    assert search.busy


@pytest.mark.parametrize("settings", [dict(beam=1), dict(beam=3, alignments=True), dict(sampling=True, beam=1),
                                      dict(beam=3, replace_unk=True)])
def test_searches_that_lines_cannot_join_are_left_to_translate(trained_ckpt, settings):
    assert Decoder(DecodeSettings(models=(str(trained_ckpt),), **settings)).continuous() is None


def test_an_ensemble_is_left_to_translate(trained_ckpt):
    assert Decoder(DecodeSettings(models=(str(trained_ckpt),) * 2, beam=3)).continuous() is None
