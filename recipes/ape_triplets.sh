#!/usr/bin/env bash
# Real automatic post-editing triplets (source, MT output, post-edit) from a parallel corpus, for the APE experiments
# of multi-source-attention.txt §4.2 where the WMT16 APE data is not at hand: the LibreOffice help en-de corpus (IT
# domain, like WMT16 APE) by default.
#
# The training MT is made by jackknifing: the training data is cut into FOLDS folds, and each fold is translated by a
# model trained on the other folds, so every MT line is real output of a system that never saw it, with the errors
# of a system trained on (FOLDS - 1) / FOLDS of the data; dev and test are translated by a model trained on all of
# it. The human German translation plays the post-edit. Text is tokenised as the WMT APE data is
# (sacrebleu's 13a tokeniser), so that edit operations and HTER work on words and punctuation.
#
# Usage: recipes/ape_triplets.sh [--dry-run] [--gpus N] [WORKDIR]   (default WORKDIR ./ape-triplets)
#   --dry-run  prints each step's command and runs none (creates nothing)
#   --gpus N   trains the MT models under 'torchrun --nproc-per-node N -m nmtkit train' (one process per GPU)
# Inputs (local paths):
#   CORPUS  a folder of {train,dev,test}.{en,de} [default: ../shared/data/lo-ende beside the checkout]
# Output: WORKDIR/triplets/{train,dev,test}.{src,mt,pe}, and the do-nothing baseline's TER and BLEU (MT as it is).
# Settings: FOLDS (default 5: FOLDS + 1 MT models); MT_STEPS (default 3000) updates of MT_BATCH (64) sentences for
# each MT model; MT_SIZES (default "--emb-size 256 --enc-size 256 --dec-size 512"); MT_BEAM (default 5); DEVICE (auto).
# A step whose outputs exist is skipped, so a run that failed or was stopped resumes where it was (a stopped
# training goes on with --resume); a failed step stops the recipe with one line naming the step.
# The machinery (options, steps, training) is recipes/lib.sh's.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
options ape-triplets "$@"
whole_numbers MT_STEPS MT_BEAM MT_BATCH
here=$(cd "$(dirname "$0")" && pwd)
corpus=${CORPUS:-$here/../../shared/data/lo-ende}
read -r -a sizes <<< "${MT_SIZES:---emb-size 256 --enc-size 256 --dec-size 512}"
folds=${FOLDS:-5}
[[ $folds =~ ^[0-9]+$ ]] && [ "$folds" -ge 2 ] || { echo "error: FOLDS: a whole number of folds >= 2, got '$folds'" >&2
                                                   exit 2; }

tokenise() { py 'import sys
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
t = Tokenizer13a()
for line in open(sys.argv[1], encoding="utf-8"):
    print(t(line.rstrip("\n")))' "$1"; }

input CORPUS "$corpus"/{train,dev,test}.{en,de}
inputs_found

stage "1. $folds folds of the training data, and what lies outside each"
[ -d "$work/text" ] || step mkdir -p "$work/text"
lines=$(wc -l < "$corpus/train.en" 2>/dev/null || echo 0)
size=$(( (lines + folds - 1) / folds ))  # fold k: lines (k - 1) * size + 1 to k * size
parts=()
for k in $(seq "$folds"); do
  range="$(( (k - 1) * size + 1 )),$(( k * size ))"
  for side in en de; do
    into "$work/text/fold$k.$side" sed -n "${range}p" "$corpus/train.$side"
    into "$work/text/without$k.$side" sed "${range}d" "$corpus/train.$side"
  done
  parts+=("without$k")
done
for side in en de; do into "$work/text/all.$side" cat "$corpus/train.$side"; done

stage "2. an MT model without each fold, and one on all the training data"
for part in "${parts[@]}" all; do
  [ -f "$work/mt-$part/data/manifest.json" ] || step nmtkit preprocess --train "$work/text/$part" \
    --valid "$corpus/dev" --src en --tgt de --vocab spm:8000 --max-len 80 -o "$work/mt-$part/data"
  train "$work/mt-$part/model" --data "$work/mt-$part/data" --arch rnnsearch "${sizes[@]}" \
    --batch-size "${MT_BATCH:-64}" --max-steps "${MT_STEPS:-3000}" --valid-every 500 --valid-max-sentences 300 \
    --patience 0 --device "$device"
done

stage "3. real MT output: each fold by the model that did not see it, dev and test by the model of all"
translate() {  # translate MODEL INPUT OUTPUT
  into "$3" nmtkit translate -m "$1" --beam "${MT_BEAM:-5}" --device "$device" -i "$2"
}
translated=()
for k in $(seq "$folds"); do
  translate "$work/mt-without$k/model/best.pt" "$work/text/fold$k.en" "$work/text/fold$k.mt"
  translated+=("$work/text/fold$k.mt")
done
translate "$work/mt-all/model/best.pt" "$corpus/dev.en" "$work/text/dev.mt"
translate "$work/mt-all/model/best.pt" "$corpus/test.en" "$work/text/test.mt"

stage "4. triplets, tokenised"
[ -d "$work/triplets" ] || step mkdir -p "$work/triplets"
into "$work/text/train.mt" cat "${translated[@]}"
for split in train dev test; do
  raw=$corpus/$split; [ "$split" = train ] && raw=$work/text/all
  into "$work/triplets/$split.src" tokenise "$raw.en"
  into "$work/triplets/$split.mt" tokenise "$work/text/$split.mt"
  into "$work/triplets/$split.pe" tokenise "$raw.de"
done
[ "$dry" = 1 ] && exit 0

echo "== do nothing (the MT output as it is) against the post-edits"
for split in dev test; do  # (each score apart: a failing command substitution in printf's arguments stops nothing)
  hter=$(nmtkit score --metric ter -r "$work/triplets/$split.pe" -i "$work/triplets/$split.mt" --score-only)
  bleu=$(nmtkit score --metric bleu --tokenize none -r "$work/triplets/$split.pe" -i "$work/triplets/$split.mt" \
    --score-only)
  printf '%-5s HTER %s  BLEU %s\n' "$split" "$hter" "$bleu"
done
