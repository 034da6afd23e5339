#!/usr/bin/env bash
# The papers' comparisons restated with significance (issue 31): three seeds of every system at the budgets of
# bench/README.md, then `nmtkit compare` (paired bootstrap and approximate randomisation, seed means and every pair
# of runs) on the LibreOffice en-de test set and the emoji captions.
# Usage: bench/significance.sh [rnn|transformer|captions|compare] ...
#   rnn:         MODELS (default rnnsearch target-attn ftatt-rnn rtatt-rnn bitatt-rnn; target-attn warm-started
#                from rnnsearch at half the budget) for each seed of SEEDS (bench/target_attention_lo_ende.sh,
#                STEPS 1500: 3,000 updates), model by model in that order, JOBS runs at a time (default 2) on one
#                thread each; a run whose test output exists is not trained again, an interrupted one is resumed
#   transformer: transformer and bitatt-transformer, TSTEPS updates each (default 500, bench/README.md's budget for
#                this pair; bench/transformer_lo_ende.sh), each seed
#   captions:    show-attend-tell without and with target attention on the emoji captions' small-CNN features
#                (bench/caption_emoji.sh, 1,500 updates), each seed
#   compare:     the tables (stdout) and their JSON and CSV under RUNS/significance
# Environment: SHARED, RUNS (as the scripts it runs), SEEDS (default "1 2 3"), JOBS (default 2), MODELS, TSTEPS,
#   THREADS (of the transformer and captions stages, default 2).
# The test outputs of every run are kept in bench/outputs (tracked): a run whose output is there is not trained
# again, and `compare` can be run elsewhere.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$here/../../shared}
runs=${RUNS:-$here/runs}
read -r -a seeds <<< "${SEEDS:-1 2 3}"
data=$shared/data/lo-ende
read -r -a rnn_models <<< "${MODELS:-rnnsearch target-attn ftatt-rnn rtatt-rnn bitatt-rnn}"

tag_of() { [ "$1" = 1 ] && echo "" || echo "-seed$1"; }  # bench/target_attention_lo_ende.sh's run names

rnn_run() {  # rnn_run MODEL SEED: one run trained and evaluated, unless its test output exists; target-attn waits
  local model=$1 seed=$2 tag failed  # for its seed's rnnsearch (its warm start); a failure leaves MODEL.failed
  tag=$(tag_of "$seed")
  failed=$runs/significance/$model$tag.failed
  [ -s "$here/outputs/rnn/$model.s$seed.de" ] && return
  rm -f "$failed"
  if [ "$model" = target-attn ]; then
    while [ ! -s "$runs/target/rnnsearch$tag.beam5.de" ]; do
      [ -e "$runs/significance/rnnsearch$tag.failed" ] && { echo "rnnsearch$tag failed" > "$failed"; return 1; }
      sleep 30
    done
  fi
  if RESUME=1 SEED=$seed TAG=$tag STEPS=1500 THREADS=1 bash "$here/target_attention_lo_ende.sh" "$model" \
      > "$runs/significance/$model$tag.out" 2>&1; then
    keep "$runs/target/$model$tag.beam5.de" "rnn/$model.s$seed.de"
  else
    echo "see $runs/significance/$model$tag.out" > "$failed"
    return 1
  fi
}

keep() {  # keep FILE NAME: a test output into bench/outputs/NAME
  mkdir -p "$(dirname "$here/outputs/$2")"
  cp "$1" "$here/outputs/$2"
}

# files KIND SYSTEM: the test outputs of SYSTEM over the seeds, comma-separated, as `nmtkit compare --sys` takes them
files() {
  local kind=$1 system=$2 seed list=()
  for seed in "${seeds[@]}"; do
    case $kind in
    rnn) list+=("$here/outputs/rnn/$system.s$seed.de") ;;
    transformer) list+=("$here/outputs/transformer/$system.s$seed.de") ;;
    captions) list+=("$here/outputs/captions/$system.s$seed.en") ;;
    esac
  done
  (IFS=,; echo "${list[*]}")
}

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(rnn transformer captions compare)
mkdir -p "$runs/significance"
for what in "${stages[@]}"; do
  case $what in
  rnn)
    running=0
    for model in "${rnn_models[@]}"; do
      for seed in "${seeds[@]}"; do
        rnn_run "$model" "$seed" &
        running=$((running + 1))
        while [ ! -f "$runs/corpus/manifest.json" ] && kill -0 $! 2> /dev/null; do sleep 5; done  # the first makes it
        if [ "$running" -ge "${JOBS:-2}" ]; then wait -n || true; running=$((running - 1)); fi
      done
    done
    wait
    failures=$(find "$runs/significance" -name '*.failed')
    [ -z "$failures" ] || { echo "error: runs failed: $(echo "$failures" | xargs -n1 basename | tr '\n' ' ')" >&2; exit 1; }
    ;;
  transformer)
    for seed in "${seeds[@]}"; do
      for arch in transformer bitatt-transformer; do
        [ -s "$here/outputs/transformer/$arch.s$seed.de" ] && continue
        SEED=$seed STEPS=${TSTEPS:-500} bash "$here/transformer_lo_ende.sh" "$arch" quality
        SEED=$seed PRECISIONS=fp32 bash "$here/transformer_lo_ende.sh" "$arch" decode
        keep "$runs/$arch.s$seed.test.beam5.fp32.de" "transformer/$arch.s$seed.de"
      done
    done ;;
  captions)
    [ -d "$runs/caption/cnn" ] || FEATURES=cnn bash "$here/caption_emoji.sh" features
    FEATURES=cnn SEEDS="${seeds[*]}" STEPS=1500 bash "$here/caption_emoji.sh" quality
    for seed in "${seeds[@]}"; do
      for variant in base tatt; do keep "$runs/caption/cnn.$variant.s$seed.test.en" "captions/cnn.$variant.s$seed.en"; done
    done
    keep "$runs/caption/cnn/test.en" captions/test.en ;;
  compare)
    out=$runs/significance
    compare() {  # compare NAME REF SYSTEM-ARGUMENTS...: the table, and NAME.json, NAME.csv; skipped if a file is missing
      local name=$1 ref=$2 arg missing=()
      shift 2
      for arg in "$@"; do
        [[ $arg == *=* ]] || continue
        IFS=, read -r -a listed <<< "${arg#*=}"
        for file in "${listed[@]}"; do [ -s "$file" ] || missing+=("$(basename "$file")"); done
      done
      if [ ${#missing[@]} -gt 0 ]; then echo "== $name: skipped, no ${missing[*]}"; return; fi
      echo "== $name"
      nmtkit compare -r "$ref" "$@" --metric bleu,chrf++ --json "$out/$name.json" --csv "$out/$name.csv"
    }
    compare target-attention "$data/test.de" --sys "rnnsearch=$(files rnn rnnsearch)" \
      --sys "target-attn=$(files rnn target-attn)"
    compare bidirectional-rnn "$data/test.de" --sys "rnnsearch=$(files rnn rnnsearch)" \
      --sys "ftatt-rnn=$(files rnn ftatt-rnn)" --sys "rtatt-rnn=$(files rnn rtatt-rnn)" \
      --sys "bitatt-rnn=$(files rnn bitatt-rnn)"
    compare bidirectional-transformer "$data/test.de" --sys "transformer=$(files transformer transformer)" \
      --sys "bitatt-transformer=$(files transformer bitatt-transformer)"
    compare captions "$here/outputs/captions/test.en" --sys "base=$(files captions cnn.base)" \
      --sys "target-attention=$(files captions cnn.tatt)" ;;
  *) echo "error: unknown stage $what (rnn, transformer, captions, compare)" >&2; exit 2 ;;
  esac
done
