#!/usr/bin/env bash
# Real automatic post-editing triplets (source, MT output, post-edit) from a parallel corpus, for the APE experiments
# of multi-source-attention.txt §4.2 where the WMT16 APE data is not at hand: the LibreOffice help en-de corpus (IT
# domain, like WMT16 APE) by default.
#
# The training half A is translated by a model trained on half B and half B by a model trained on half A, so every
# MT line is real output of a system that never saw it; dev and test are translated by a model trained on all of the
# training data. The human German translation plays the post-edit. Text is tokenised as the WMT APE data is
# (sacrebleu's 13a tokeniser), so that edit operations and HTER work on words and punctuation.
#
# Usage: recipes/ape_triplets.sh [--dry-run] [WORKDIR]   (default WORKDIR ./ape-triplets; --dry-run prints each step)
# Output: WORKDIR/triplets/{train,dev,test}.{src,mt,pe}, and the do-nothing baseline's TER and BLEU (MT as it is).
# Settings: CORPUS, a folder of train/dev/test .en and .de [default: ../shared/data/lo-ende beside the checkout];
# MT_STEPS (default 3000) updates of MT_BATCH (64) sentences for each MT model; MT_SIZES (default
# "--emb-size 256 --enc-size 256 --dec-size 512"); MT_BEAM (default 5); DEVICE (auto).
# A step whose output exists is skipped, so a run that failed or was killed resumes where it stopped.
set -euo pipefail
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-ape-triplets}
corpus=${CORPUS:-$here/../../shared/data/lo-ende}
device=${DEVICE:-auto}
read -r -a sizes <<< "${MT_SIZES:---emb-size 256 --enc-size 256 --dec-size 512}"

step() {  # run a command, or print it with --dry-run; stop with a message naming the step if it fails
  if [ "$dry" = 1 ]; then printf '%q ' "$@"; echo; return; fi
  "$@" || { echo "error: step failed: $*" >&2; exit 1; }
}

into() {  # into FILE COMMAND...: COMMAND's standard output into FILE (atomically), unless FILE exists
  local out=$1; shift
  [ -e "$out" ] && [ "$dry" = 0 ] && return
  if [ "$dry" = 1 ]; then printf '%q ' "$@"; echo "> $out"; return; fi
  "$@" > "$out.part" || { echo "error: step failed: $* > $out" >&2; exit 1; }
  mv "$out.part" "$out"
}

tokenise() { python -c 'import sys
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
t = Tokenizer13a()
for line in open(sys.argv[1], encoding="utf-8"):
    print(t(line.rstrip("\n")))' "$1"; }

[ "$dry" = 1 ] || [ -f "$corpus/train.en" ] || { echo "error: CORPUS: $corpus has no train.en" >&2; exit 2; }

echo "== 1. halves of the training data" >&2
step mkdir -p "$work/text"
lines=$(wc -l < "$corpus/train.en" 2>/dev/null || echo 0)
half=$(( (lines + 1) / 2 ))
for side in en de; do
  into "$work/text/A.$side" head -n "$half" "$corpus/train.$side"
  into "$work/text/B.$side" tail -n "+$((half + 1))" "$corpus/train.$side"
  into "$work/text/all.$side" cat "$corpus/train.$side"
done

echo "== 2. an MT model on each half and one on all the training data" >&2
for part in A B all; do
  [ -f "$work/mt-$part/data/manifest.json" ] || step nmtkit preprocess --train "$work/text/$part" \
    --valid "$corpus/dev" --src en --tgt de --vocab spm:8000 --max-len 80 -o "$work/mt-$part/data"
  model=$work/mt-$part/model
  [ -e "$model/done" ] && continue
  resume=(); [ -f "$model/last.pt" ] && resume=(--resume)  # a run that was stopped goes on where it was
  step nmtkit train --data "$work/mt-$part/data" --arch rnnsearch "${sizes[@]}" --batch-size "${MT_BATCH:-64}" \
    --max-steps "${MT_STEPS:-3000}" --valid-every 500 --valid-max-sentences 300 --patience 0 --device "$device" \
    --save-dir "$model" "${resume[@]}"
  step touch "$model/done"
done

echo "== 3. real MT output: each half by the other half's model, dev and test by the model of all" >&2
translate() {  # translate MODEL INPUT OUTPUT
  into "$3" nmtkit translate -m "$1" --beam "${MT_BEAM:-5}" --device "$device" -i "$2"
}
translate "$work/mt-B/model/best.pt" "$work/text/A.en" "$work/text/A.mt"
translate "$work/mt-A/model/best.pt" "$work/text/B.en" "$work/text/B.mt"
translate "$work/mt-all/model/best.pt" "$corpus/dev.en" "$work/text/dev.mt"
translate "$work/mt-all/model/best.pt" "$corpus/test.en" "$work/text/test.mt"

echo "== 4. triplets, tokenised" >&2
step mkdir -p "$work/triplets"
into "$work/text/train.mt" cat "$work/text/A.mt" "$work/text/B.mt"
for split in train dev test; do
  raw=$corpus/$split; [ "$split" = train ] && raw=$work/text/all
  into "$work/triplets/$split.src" tokenise "$raw.en"
  into "$work/triplets/$split.mt" tokenise "$work/text/$split.mt"
  into "$work/triplets/$split.pe" tokenise "$raw.de"
done
[ "$dry" = 1 ] && exit 0

echo "== do nothing (the MT output as it is) against the post-edits"
for split in dev test; do
  printf '%-5s HTER %s  BLEU %s\n' "$split" \
    "$(nmtkit score --metric ter -r "$work/triplets/$split.pe" -i "$work/triplets/$split.mt" --score-only)" \
    "$(nmtkit score --metric bleu --tokenize none -r "$work/triplets/$split.pe" -i "$work/triplets/$split.mt" \
       --score-only)"
done
