#!/usr/bin/env bash
# Target attention against rnnsearch on LibreOffice en-de (issue 4's benchmark), on the peers' data
# (lo-ende-sp8k, the same corpus as bench/rnnsearch_lo_ende.sh). The models are small (embeddings 128,
# GRUs 128 per direction / 256) so that all five get several epochs in one sitting on a 2-core machine;
# SIZES="--emb-size 256 --enc-size 256 --dec-size 512" gives the rnnsearch benchmark's sizes.
# Usage: bench/target_attention_lo_ende.sh [MODEL ...]
#   MODEL: rnnsearch target-attn ftatt-rnn rtatt-rnn bitatt-rnn (default: all five, in this order).
#   Every model gets the same number of updates, 2 x STEPS: rnnsearch, ftatt/rtatt/bitatt-rnn from
#   scratch; target-attn warm-started from rnnsearch's checkpoint at STEPS (as the paper does) and
#   trained STEPS more (an existing rnnsearch-half checkpoint is resumed, not retrained). Then, for each:
#   parameters, test perplexity (Eq. 13), test BLEU/chrF with beam 5, and the decoding time of the test
#   set (beam 5 and greedy, batch 32; model loading excluded).
# Environment: SHARED (default ../shared beside the checkout), RUNS (default bench/runs), STEPS (default 1500),
#   SIZES (model size options), THREADS (default 2), TRAIN=0 (evaluate the trained checkpoints again, e.g.
#   to time decoding on a quiet machine), OPTIONS (more training options, e.g. "--reverse-context reference"
#   with the models rtatt-rnn bitatt-rnn: an option of an architecture is an error for the others)
#   with TAG (a suffix for the run's names, e.g. "-greedy"), SEED (default 1; give it a TAG such as "-seed2"),
#   RESUME=1 (a from-scratch model whose run folder holds a checkpoint goes on from it: an interrupted run is
#   resumed, exactly, from its last checkpoint, saved every 500 updates; without it the folder is trained anew).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$here/../../shared}
runs=${RUNS:-$here/runs}
out=$runs/target
steps=${STEPS:-1500}
read -r -a sizes <<< "${SIZES:---emb-size 128 --enc-size 128 --dec-size 256}"
read -r -a options <<< "${OPTIONS:-}"
tag=${TAG:-}
seed=${SEED:-1}
half=$out/rnnsearch-half  # rnnsearch after STEPS updates with this seed: target-attn's warm start
[ "$seed" = 1 ] || half=$out/rnnsearch-seed$seed-half
data=$shared/data/lo-ende
spm=$shared/bench/lo-ende-sp8k/spm.model
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(rnnsearch target-attn ftatt-rnn rtatt-rnn bitatt-rnn)
threads=${THREADS:-2}
export OMP_NUM_THREADS=$threads
mkdir -p "$out"
source "$here/lib.sh"

if [ ! -f "$runs/corpus/manifest.json" ]; then
  nmtkit preprocess --train "$data/train" --valid "$data/dev" --test "$data/test" --src en --tgt de \
    --src-vocab "$spm" --tgt-vocab "$spm" --max-len 80 -o "$runs/corpus" --overwrite
fi
common=(--data "$runs/corpus" "${sizes[@]}" "${options[@]}" --dropout 0.2 --batch-size 64
        --optimizer adam --lr 0.001 --clip-norm 1.0 --threads "$threads" --seed "$seed" --log-every 100 --valid-every 1000
        --valid-max-sentences 300 --patience 0 --save-every 500)

for arch in "${models[@]}"; do
  m=$arch$tag
  log=$out/$m.log
  if [ "${TRAIN:-1}" != 0 ]; then
    if [ "${RESUME:-0}" = 1 ] && [ -f "$out/$m/last.pt" ] && [ "$arch" != rnnsearch ] && [ "$arch" != target-attn ]; then
      echo "resuming $out/$m" >&2
      nmtkit train "${common[@]}" --arch "$arch" --save-dir "$out/$m" --max-steps $((2 * steps)) --resume 2>> "$log"
    else
      fresh "$out/$m"
      if [ "$arch" = rnnsearch ]; then  # keep the checkpoint at STEPS for target-attn's warm start
        resume=()  # a first half from an earlier run is resumed (or kept, if finished)
        [ -f "$half/last.pt" ] && resume=(--resume)
        nmtkit train "${common[@]}" --arch rnnsearch --save-dir "$half" --max-steps "$steps" "${resume[@]}" 2> "$log"
        cp -r "$half/." "$out/$m"  # then on to 2 x STEPS: an exact resume
        nmtkit train "${common[@]}" --arch rnnsearch --save-dir "$out/$m" --max-steps $((2 * steps)) --resume \
          2>> "$log"
      elif [ "$arch" = target-attn ]; then
        nmtkit train "${common[@]}" --arch target-attn --save-dir "$out/$m" --max-steps "$steps" \
          --init-from "$half/last.pt" --init-optimizer --init-lr 2> "$log"
      else
        nmtkit train "${common[@]}" --arch "$arch" --save-dir "$out/$m" --max-steps $((2 * steps)) 2> "$log"
      fi
    fi
  fi
  params=$(grep -o "^$arch: [0-9,]* parameters" "$log" | tail -1)
  ppl=$(nmtkit score --metric ppl -m "$out/$m/last.pt" --src "$data/test.en" -r "$data/test.de" --score-only)
  echo "== $params; test perplexity $ppl"
  for mode in "--beam 5" "--greedy"; do
    name=$(echo "$mode" | tr -d ' -')
    nmtkit translate -m "$out/$m/last.pt" $mode --batch-size 32 --threads "$threads" -i "$data/test.en" \
      -o "$out/$m.$name.de" 2> "$out/$m.$name.log"
    printf '%-6s BLEU %s  chrF %s  %s\n' "$name" \
      "$(nmtkit score --metric bleu -r "$data/test.de" -i "$out/$m.$name.de" --score-only)" \
      "$(nmtkit score --metric chrf -r "$data/test.de" -i "$out/$m.$name.de" --score-only)" \
      "$(grep -o 'translated .*' "$out/$m.$name.log" | tail -1)"
  done
done
