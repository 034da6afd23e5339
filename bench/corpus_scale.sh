#!/usr/bin/env bash
# Corpora of millions of sentences on CPU (issue 33): preprocess's speed and peak memory as the corpus grows, and
# training's peak memory over a hundred shards.
# Usage: bench/corpus_scale.sh preprocess|train
#   preprocess: for each N of SIZES (default "1000000 10000000"): RUNS/scale/N.{en,de}, LibreOffice help en-de's
#               training pairs repeated up to N pairs, copy k with " k" ending both sides (numbered variants, so
#               the text is not one block repeated); then `nmtkit preprocess` of it (spm:8000 trained on
#               its default sample of 500,000 lines, --max-len 80, shards of 100,000 pairs): wall time, pairs/s, peak
#               memory, shards. The text and corpus of each N are cleared after it (10M pairs: about 4 GB).
#   train:      an rnnsearch of ../shared/bench/PEERS.md, TRAIN_STEPS (default 300) updates, 2 threads, on TRAIN_PAIRS
#               (default 1,000,000) pairs made as above in 100 shards, and on LibreOffice help en-de itself (1 shard
#               of 29,890): peak memory of each, and the padding share of an epoch's batches of the first
#               (bench/padding.py)
# Environment: SHARED (default ../shared beside the checkout), RUNS (default bench/runs), SIZES, TRAIN_PAIRS,
#   TRAIN_STEPS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$here/../../shared}
runs=${RUNS:-$here/runs}
data=$shared/data/lo-ende
source "$here/lib.sh"
work=$runs/scale
mkdir -p "$work"

# variants N OUT: OUT.en and OUT.de, the first N pairs of the training text repeated with numbered copies
variants() {
  python - "$data/train" "$1" "$2" <<'EOF'
import sys
from itertools import count
source, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
pairs = list(zip(open(f"{source}.en", encoding="utf-8"), open(f"{source}.de", encoding="utf-8")))
with open(f"{out}.en", "w", encoding="utf-8") as en, open(f"{out}.de", "w", encoding="utf-8") as de:
    written = 0
    for k in count():
        for src, tgt in pairs:
            if written == n:
                sys.exit(0)
            suffix = f" {k}\n" if k else "\n"
            en.write(src.rstrip("\n") + suffix)
            de.write(tgt.rstrip("\n") + suffix)
            written += 1
EOF
}

# timed NAME COMMAND...: run COMMAND, printing NAME's wall time and peak memory (GB); WORK/NAME.time holds both
timed() {
  local name=$1 seconds kb
  /usr/bin/time -f "%e %M" -o "$work/$name.time" "${@:2}" 2> "$work/$name.log"
  read -r seconds kb < "$work/$name.time"
  awk -v name="$name" -v s="$seconds" -v kb="$kb" 'BEGIN { printf "%s: %.1f s, peak memory %.2f GB\n", name, s, kb / 1e6 }'
}

case ${1:-preprocess} in
preprocess)
  for n in ${SIZES:-1000000 10000000}; do
    fresh "$work/$n"
    variants "$n" "$work/$n/train"
    timed "preprocess.$n" nmtkit preprocess --train "$work/$n/train" --valid "$data/dev" --src en --tgt de \
      --vocab spm:8000 --max-len 80 --shard-size 100000 -o "$work/$n/corpus"
    python - "$work/$n/corpus" "$n" "$work/preprocess.$n.log" "$work/preprocess.$n.time" <<'EOF'
import json, sys
from pathlib import Path
corpus, n, log = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]).read_text()
seconds = float(Path(sys.argv[4]).read_text().split()[0])
shards = json.loads((corpus / "manifest.json").read_text())["splits"]["train"]["shards"]
kept = sum(shard["sentences"] for shard in shards)
print(f"  {n:,} pairs in {seconds:.0f} s: {n / seconds:,.0f} pairs/s; {kept:,} kept in {len(shards)} shards")
print("  " + next(line for line in log.splitlines() if line.startswith("train:")))
EOF
    fresh "$work/$n"  # (emptied: 10M pairs take about 4 GB)
  done ;;
train)
  n=${TRAIN_PAIRS:-1000000} steps=${TRAIN_STEPS:-300}
  if [ ! -f "$work/shards100/corpus/manifest.json" ]; then
    fresh "$work/shards100"
    variants "$n" "$work/shards100/train"
    nmtkit preprocess --train "$work/shards100/train" --valid "$data/dev" --src en --tgt de \
      --src-vocab "$shared/bench/lo-ende-sp8k/spm.model" --tgt-vocab "$shared/bench/lo-ende-sp8k/spm.model" \
      --max-len 80 --shard-size $((n / 100)) -o "$work/shards100/corpus" 2> "$work/shards100.preprocess.log"
  fi
  [ -f "$runs/corpus/manifest.json" ] || nmtkit preprocess --train "$data/train" --valid "$data/dev" \
    --test "$data/test" --src en --tgt de --src-vocab "$shared/bench/lo-ende-sp8k/spm.model" \
    --tgt-vocab "$shared/bench/lo-ende-sp8k/spm.model" --max-len 80 -o "$runs/corpus" --overwrite
  for named in "shards100=$work/shards100/corpus" "lo-ende=$runs/corpus"; do
    name=train.${named%%=*} corpus=${named#*=}
    fresh "$work/$name"
    timed "$name" nmtkit train --data "$corpus" --save-dir "$work/$name" "${rnnsearch_peers[@]}" --threads 2 \
      --seed 1 --max-steps "$steps" --log-every 50 --valid-every 100000 --valid-max-sentences 10
  done
  python "$here/padding.py" "$work/shards100/corpus" ;;
*)
  echo "usage: bench/corpus_scale.sh preprocess|train" >&2; exit 2 ;;
esac
