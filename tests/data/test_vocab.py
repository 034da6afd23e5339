import io

import pytest
import sentencepiece as spm

from nmtkit.data.vocab import BOS, EOS, PAD, UNK, SentencePieceVocab, WordVocab, load_vocab, vocab_from_state
from nmtkit.errors import NmtkitError

TEXT = ["the cat sat on the mat", "the dog sat", "a cat and a dog", "the end"] * 20


def test_word_vocab_keeps_the_most_frequent_words_and_maps_the_rest_to_unk():
    v = WordVocab.build(TEXT, 4 + 3)
    assert v.tokens[:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert v.tokens[4] == "the" and len(v) == 7
    ids = v.encode("the zebra sat")
    assert ids[1] == UNK
    assert v.decode(ids) == "the <unk> sat"
    assert v.decode([PAD, BOS] + ids + [EOS]) == "the <unk> sat"


def test_special_tokens_written_in_the_text_take_no_place_of_a_word():
    """(``<unk>`` and ``<s>`` in the text were counted among the most frequent words, then dropped: fewer than N.)"""
    v = WordVocab.build(["<unk> <s> the cat", "<unk> <s> the dog", "<unk> <s> a"], 4 + 3)
    assert v.tokens == ["<pad>", "<unk>", "<s>", "</s>", "the", "cat", "dog"]
    assert v.encode("<s> the </s> <pad> cat") == [UNK, 4, UNK, UNK, 5]  # (typed, they are words the model lacks)


def test_word_vocab_file_round_trip(tmp_path):
    v = WordVocab.build(TEXT, 50)
    v.save(tmp_path / "v.txt")
    w = load_vocab(tmp_path / "v.txt")
    assert w.tokens == v.tokens
    assert vocab_from_state(v.state()).tokens == v.tokens


def test_word_list_without_specials_gets_them(tmp_path):
    (tmp_path / "v.txt").write_text("hello\t10\nworld\t5\n")
    v = load_vocab(tmp_path / "v.txt")
    assert v.tokens == ["<pad>", "<unk>", "<s>", "</s>", "hello", "world"]


@pytest.mark.parametrize("text, message", [
    ("hello\nthe cat sat\n", "v.txt:2: 'the cat sat' is not one word; a word list holds one a line"),
    ("hello\n\tworld\n", "v.txt:2: '' is not one word"),
    ("hello\nworld\t5\nhello\t2\n", "v.txt:3: 'hello' is listed again (first on line 1)"),
    ("\n  \n\n", "v.txt: no word in it"),  # (taken as a list of the specials alone: every word <unk>)
    ("hello\t10\nworld\tmany\n", "v.txt:2: 'many' is not a count; a word list holds WORD or WORD<TAB>COUNT a line"),
])
def test_a_word_list_of_lines_that_are_not_one_word_each_or_repeat_one_is_refused(tmp_path, text, message):
    (tmp_path / "v.txt").write_text(text)
    with pytest.raises(NmtkitError) as e:
        load_vocab(tmp_path / "v.txt")
    assert str(e.value).startswith(f"{tmp_path / message}")


def test_a_sentencepiece_vocab_file_given_for_a_word_list_is_refused_naming_its_model(tmp_path):
    """(read as a word list, spm_train's .vocab made a vocabulary of pieces with most of a text's words <unk>)"""
    (tmp_path / "spm.vocab").write_text("<unk>\t0\n<s>\t0\n</s>\t0\n\u2581the\t-3.25\n\u2581cat\t-4.5\n")
    with pytest.raises(NmtkitError) as e:
        load_vocab(tmp_path / "spm.vocab")
    assert str(e.value) == (f"{tmp_path / 'spm.vocab'}:4: '-3.25' is not a count; a word list holds WORD or "
                            f"WORD<TAB>COUNT a line; a SentencePiece .vocab (pieces and log-probabilities)? give its "
                            f"model, {tmp_path / 'spm.model'}")


def test_sentencepiece_train_encode_decode(tmp_path):
    (tmp_path / "t.txt").write_text("\n".join(TEXT) + "\n")
    v = SentencePieceVocab.train([tmp_path / "t.txt"], 30)
    ids = v.encode("the cat sat")
    assert all(i >= 4 for i in ids)
    assert v.decode(ids) == "the cat sat"
    assert v.decode(ids + [EOS, PAD]) == "the cat sat"
    w = vocab_from_state(v.state())
    assert w.encode("the dog") == v.encode("the dog") and len(w) == len(v)
    v.save(tmp_path / "m.model")
    assert load_vocab(tmp_path / "m.model").encode("a dog") == v.encode("a dog")


def test_foreign_sentencepiece_model_special_ids_are_mapped(tmp_path):
    """A model trained elsewhere with unk=0, bos=1, eos=2 and no pad still uses our ids."""
    (tmp_path / "t.txt").write_text("\n".join(TEXT) + "\n")
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(input=str(tmp_path / "t.txt"), model_writer=buf, vocab_size=30,
                                   hard_vocab_limit=False, minloglevel=2)
    v = SentencePieceVocab(buf.getvalue())
    assert len(v) == v.sp.get_piece_size() + 1  # pad added
    ids = v.encode("the cat ⅀")
    assert UNK in ids and min(i for i in ids if i != UNK) >= 4
    assert v.decode(v.encode("the cat sat")) == "the cat sat"
    assert v.id_to_token([PAD, UNK, BOS, EOS]) == ["<pad>", "<unk>", "<s>", "</s>"]


def test_word_index_joins_subwords_as_the_detokenised_text_splits_at_spaces(tmp_path):
    (tmp_path / "t.txt").write_text("\n".join(TEXT) + "\n")
    v = SentencePieceVocab.train([tmp_path / "t.txt"], 30)
    for line in ["the cat sat", "a doggedly catty dog", "sat", "xyz the"]:  # (l, y, x, z: unknown characters)
        ids = v.encode(line)
        index = v.word_index(ids)
        assert len(index) == len(ids) > len(line.split()) - 1 and index[0] == 0
        assert index[-1] == len(v.decode(ids).split()) - 1 and index == sorted(index)
        if UNK not in ids:  # each word is its pieces joined
            pieces, words = v.id_to_token(ids), line.split()
            assert ["".join(p for p, i in zip(pieces, index) if i == w).replace("\u2581", "")
                    for w in range(len(words))] == words
    assert WordVocab(["a", "b"]).word_index([4, 5, 1]) == [0, 1, 2] and v.word_index([]) == []


def test_pieces_of_an_output_that_decodes_to_no_word_belong_to_none(tmp_path):
    """(an output of lone "▁" pieces decodes to "": its pieces were given word 0, and --alignments linked a word
    that the output line does not have)"""
    (tmp_path / "t.txt").write_text("\n".join(TEXT) + "\n")
    v = SentencePieceVocab.train([tmp_path / "t.txt"], 30)
    space = next(i for i in range(4, len(v)) if v.id_to_token([i]) == ["\u2581"])
    assert v.decode([space] * 3) == "" and v.word_index([space] * 3) == [-1, -1, -1]
    cat = v.encode("cat")
    assert v.word_index([space, *cat, space]) == [0] * (len(cat) + 2)  # (one word: "cat")


def test_an_inputs_words_are_those_its_text_splits_into_at_spaces(tmp_path):
    """(an input's words were counted on its decoded text, where each unknown character is a word " ⁇ " of its own:
    alignments linked source words past the input's)"""
    (tmp_path / "t.txt").write_text("\n".join(TEXT) + "\n")
    v = SentencePieceVocab.train([tmp_path / "t.txt"], 30)
    for line in ["the cat sat", "xyz the", "the zq  cat", "<s> </s> <pad> sat", "catx zzz dog"]:
        ids = v.encode(line)
        index = v.input_word_index(ids)
        assert len(index) == len(ids) and index == sorted(index) and index[0] == 0, (line, index)
        assert index[-1] == len(line.split()) - 1, (line, v.id_to_token(ids), index)
    assert WordVocab(["a", "b"]).input_word_index([4, 5, 1]) == [0, 1, 2] and v.input_word_index([]) == []


def test_a_word_list_holding_a_nul_is_read_as_words(tmp_path):
    """(A corpus line with a NUL byte in a word: its word list is still a word list, not a SentencePiece model.)"""
    words = WordVocab.build(["a\x00b c"] * 3, 10)
    path = tmp_path / "vocab.src.txt"
    words.save(path)
    loaded = load_vocab(path)
    assert isinstance(loaded, WordVocab) and loaded.encode("a\x00b c") == words.encode("a\x00b c")


def test_sentencepiece_on_a_text_of_lines_too_long_for_it_says_why(tmp_path):
    text = tmp_path / "long.txt"
    text.write_text(("word " * 1000 + "\n") * 20)
    with pytest.raises(NmtkitError, match=f"^SentencePiece training failed: no line of {text} could be used \\(it skips "
                                          "empty lines and lines over 4,192 bytes\\)$"):
        SentencePieceVocab.train([text], 50)
