"""What a corpus' streams are (kind, size, language), as models check them and checkpoints keep them."""
import pytest

from nmtkit.data.streams import FEATURES, TOKENS, CorpusMeta, StreamInfo
from nmtkit.errors import NmtkitError


def test_a_stream_of_another_kind_is_refused_as_a_missing_one_is():
    meta = CorpusMeta({"image": StreamInfo(TOKENS, 10), "tgt": StreamInfo(TOKENS, 9)})
    meta.require("rnnsearch-like", image=TOKENS)
    for kinds in ({"image": FEATURES}, {"src": TOKENS}):
        with pytest.raises(NmtkitError, match=r"reads a \w+ stream named '\w+'; the corpus has: image \(tokens\)"):
            meta.require("show-attend-tell", **kinds)


def test_the_streams_languages_are_kept_in_a_checkpoint_s_state():
    meta = CorpusMeta.text(10, 12, "de", "en")
    assert CorpusMeta.from_state(meta.state()) == meta
    assert [s.lang for s in meta.streams.values()] == ["de", "en"]
