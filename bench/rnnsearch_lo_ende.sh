#!/usr/bin/env bash
# rnnsearch on LibreOffice en-de, set up exactly as ../shared/bench/PEERS.md measured the peers.
# Usage: bench/rnnsearch_lo_ende.sh [corpus|speed|quality|decode|all]   (default: all)
#   corpus:  the preprocessed corpus only (RUNS/corpus; every other stage makes it first)
#   speed:   a 300-step run; training tokens/s (median of the 25-step windows after step 50), peak memory
#   quality: 25 minutes of training (wall clock, validation included), then test BLEU/chrF, beam 5 and greedy
#   decode:  wall time and peak memory of translating the 2,269 test sentences, greedy and beam 5, batch 32,
#            in each of PRECISIONS (default: fp32 int8 bf16)
# Environment: SHARED (default ../shared beside the checkout), RUNS (default bench/runs), MINUTES (default 25).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$here/../../shared}
runs=${RUNS:-$here/runs}
minutes=${MINUTES:-25}
what=${1:-all}
data=$shared/data/lo-ende
spm=$shared/bench/lo-ende-sp8k/spm.model
export OMP_NUM_THREADS=2
mkdir -p "$runs"
source "$here/lib.sh"
model=("${rnnsearch_peers[@]}" --threads 2 --seed 1)

if [ ! -f "$runs/corpus/manifest.json" ]; then
  # the peers' joint SentencePiece model; pairs over 80 pieces dropped (29,890 of 30,510 kept)
  nmtkit preprocess --train "$data/train" --valid "$data/dev" --test "$data/test" --src en --tgt de \
    --src-vocab "$spm" --tgt-vocab "$spm" --max-len 80 -o "$runs/corpus" --overwrite
fi

if [[ $what == speed || $what == all ]]; then
  fresh "$runs/speed"
  peak "$runs/speed.mem" nmtkit train --data "$runs/corpus" --save-dir "$runs/speed" "${model[@]}" \
    --max-steps 300 --log-every 25 --valid-every 100000 --valid-max-sentences 10 2> "$runs/speed.log"
  python "$here/summarize.py" speed "$runs/speed/train.jsonl" "$runs/speed.mem"
fi

if [[ $what == quality || $what == all ]]; then
  fresh "$runs/quality"
  peak "$runs/quality.mem" nmtkit train --data "$runs/corpus" --save-dir "$runs/quality" "${model[@]}" \
    --max-time "$minutes" --log-every 100 --valid-every 1000 --valid-max-sentences 300 --patience 0 \
    2> "$runs/quality.log"
  python "$here/summarize.py" speed "$runs/quality/train.jsonl" "$runs/quality.mem"
fi

if [[ $what == decode || $what == quality || $what == all ]]; then
  # shellcheck disable=SC2086
  decode_test "$runs/quality/last.pt" "$runs/test." ${PRECISIONS:-fp32 int8 bf16}
fi
