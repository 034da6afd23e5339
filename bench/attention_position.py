"""Where source attention peaks, relative to the sentence (diagnostic for local-p, not a test).

    python bench/attention_position.py bench/runs/luong/*/test.att.h5

For each attention file: over its first 500 sentences of more than 3 source tokens, the mean of
argmax_s a_t(s) / (|x| - 1) over all output words, and the share of output words whose peak lies
in the last 15% of the source sentence (a collapsed local-p puts nearly all of them there).
"""
import sys

import numpy as np

from nmtkit.search.attention_file import AttentionFile

for path in sys.argv[1:]:
    with AttentionFile(path) as f:
        peaks = []
        for i in range(min(500, len(f))):
            sentence = f[i]
            weights, n = np.asarray(sentence["attention"]["source"]), len(sentence["src_tokens"])
            if n > 3:
                peaks.extend(weights.argmax(1) / (n - 1))
    peaks = np.array(peaks)
    print(f"{path}: mean peak position {peaks.mean():.2f}; share in the last 15%: {(peaks >= 0.85).mean():.2f}")
