"""Word alignments from attention: each target token's most attended source token (never </s>), lifted to words."""
import numpy as np

from nmtkit.search.alignment import attention_links, moses


def test_each_target_token_links_its_most_attended_source_word_once():
    weights = np.array([[0.7, 0.1, 0.1, 0.1],    # target token 0 -> source token 0
                        [0.1, 0.6, 0.2, 0.1],    # 1 -> 1
                        [0.1, 0.5, 0.3, 0.1],    # 2 -> 1 (the same words as token 1: one link)
                        [0.3, 0.1, 0.2, 0.4],    # 3 -> the input's </s> (column 3) is never linked: its best, 0
                        [0.0, 0.0, 0.0, 1.0]])   # the output's </s> row: not a word
    links = attention_links(weights, src_words=[0, 1, 1], tgt_words=[0, 1, 1, 2])
    assert links == [(0, 0), (0, 2), (1, 1)] and moses(links) == "0-0 0-2 1-1"
    assert attention_links(weights, [0, 1, 2], []) == [] and moses([]) == ""
