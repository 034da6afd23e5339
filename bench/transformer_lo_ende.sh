#!/usr/bin/env bash
# transformer and bitatt-transformer on LibreOffice en-de (the data and SentencePiece model of ../shared/bench/PEERS.md),
# at a size that learns on 2 CPU cores: 3+3 layers, d 256, FFN 1024, 4 heads, shared and tied embeddings.
# Usage: bench/transformer_lo_ende.sh ARCH [speed|quality|decode|ct2|steps]
#   speed:   a 200-step run; training tokens/s (median of the 25-step windows after step 50), peak memory
#   quality: STEPS updates (set it to what fits the 25 minutes of the RNN benchmark, from the speed run), then
#            test BLEU/chrF, beam 5 and greedy
#   decode:  wall time and peak memory of translating the 2,269 test sentences, greedy and beam 5, batch 32,
#            fp32 and int8 (PRECISIONS, default "fp32 int8")
#   ct2:     the same with the model exported to CTranslate2 (float32 and int8), via bench/ct2_translate.py
#   steps:   one greedy decoding step at batch 1 and 32, nmtkit against CTranslate2 float32 (bench/transformer_step.py)
# Environment: SHARED (default ../shared beside the checkout), RUNS (default bench/runs), STEPS, SEED (default 1),
#   THREADS (default 2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$here/../../shared}
runs=${RUNS:-$here/runs}
arch=${1:?ARCH: transformer or bitatt-transformer}
what=${2:-quality}
seed=${SEED:-1}
data=$shared/data/lo-ende
spm=$shared/bench/lo-ende-sp8k/spm.model
threads=${THREADS:-2}
export OMP_NUM_THREADS=$threads
mkdir -p "$runs"
model=(--arch "$arch" --d-model 256 --ffn-size 1024 --heads 4 --enc-layers 3 --dec-layers 3 --dropout 0.1
       --attention-dropout 0.1 --share-embeddings --tie-embeddings --label-smoothing 0.1
       --batch-type tokens --batch-size 2048 --optimizer adam --lr 0.0015 --lr-schedule inverse-sqrt
       --warmup-steps 500 --clip-norm 1.0 --threads "$threads" --seed "$seed")
run=$runs/$arch.s$seed

if [ ! -f "$runs/corpus/manifest.json" ]; then
  nmtkit preprocess --train "$data/train" --valid "$data/dev" --test "$data/test" --src en --tgt de \
    --src-vocab "$spm" --tgt-vocab "$spm" --max-len 80 -o "$runs/corpus" --overwrite
fi

source "$here/lib.sh"

case $what in
speed)
  fresh "$run.speed"
  peak "$run.speed.mem" nmtkit train --data "$runs/corpus" --save-dir "$run.speed" "${model[@]}" \
    --max-steps 200 --log-every 25 --valid-every 100000 --valid-max-sentences 10 2> "$run.speed.log"
  python "$here/summarize.py" speed "$run.speed/train.jsonl" "$run.speed.mem" ;;
quality)
  fresh "$run"
  peak "$run.mem" nmtkit train --data "$runs/corpus" --save-dir "$run" "${model[@]}" \
    --max-steps "${STEPS:?STEPS: updates to train}" --log-every 100 --valid-every 500 --valid-max-sentences 300 \
    --patience 0 --keep-checkpoints 3 2> "$run.log"
  python "$here/summarize.py" speed "$run/train.jsonl" "$run.mem" ;;
decode)
  # shellcheck disable=SC2086
  decode_test "$run/last.pt" "$run.test." ${PRECISIONS:-fp32 int8} ;;
ct2)
  for quantization in float32 int8; do
    nmtkit export -m "$run/last.pt" -o "$run.ct2.$quantization" --quantization "$quantization" --force
    for beam in 1 5; do
      name=ct2.beam$beam.$quantization
      start=$(date +%s.%N)
      peak "$run.$name.mem" python "$here/ct2_translate.py" "$run.ct2.$quantization" "$spm" "$beam" \
        < "$data/test.en" > "$run.test.$name.de" 2> "$run.$name.log"
      end=$(date +%s.%N)
      python "$here/summarize.py" decode "$run.test.$name.de" "$data/test.de" "$run.$name.mem" "$start" "$end" "$name" "$run.$name.log"
    done
  done ;;
steps)
  [ -d "$run.ct2.float32" ] || nmtkit export -m "$run/last.pt" -o "$run.ct2.float32" --quantization float32
  python "$here/transformer_step.py" "$run/last.pt" "$run.ct2.float32" "$spm" "$data/test.en" 1 32 ;;
esac
