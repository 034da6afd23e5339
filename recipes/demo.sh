#!/usr/bin/env bash
# The embedded demo: generate an English->German numbers corpus, preprocess it, train
# rnnsearch for about 90 seconds on the CPU, translate the test set and score it.
#
# Usage: recipes/demo.sh [--dry-run] [--gpus N] [WORKDIR]   (default WORKDIR ./nmtkit-demo)
#   --dry-run  prints each step's command and runs none (creates nothing)
#   --gpus N   trains under 'torchrun --nproc-per-node N -m nmtkit train' (one process per GPU)
# Unlike the paper recipes, the demo starts afresh on each run: in the folder of an earlier demo (it holds the marker
# .nmtkit-workdir) what the demo makes is replaced (text, data, model, test.hyp.de; anything else there is kept), an
# empty folder is used, and any other folder is refused in one line, nothing deleted. It has no inputs.
# Settings: DEMO_MINUTES (default 1.5), the training time; DEVICE (auto).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
afresh=1  # (WORKDIR is made anew below, not resumed)
options nmtkit-demo "$@"
minutes=${DEMO_MINUTES:-1.5}
[[ $minutes =~ ^([0-9]+([.][0-9]*)?|[.][0-9]+)$ && ! $minutes =~ ^[0.]+$ ]] ||  # (before the folder is touched)
  { echo "error: DEMO_MINUTES: expects a number of minutes above 0, got '$minutes'" >&2; exit 2; }

fresh "$work" text data model test.hyp.de  # (what else the folder holds is the user's, and stays)
stage "1. a corpus of numbers"
step nmtkit demo-corpus "$work/text"
stage "2. preprocess"
step nmtkit preprocess --train "$work/text/train" --valid "$work/text/valid" --test "$work/text/test" \
  --src en --tgt de --vocab word:1000 -o "$work/data"
stage "3. train rnnsearch for $minutes minutes"
step "${launcher[@]}" train --data "$work/data" --save-dir "$work/model" --arch rnnsearch \
  --emb-size 64 --enc-size 128 --dec-size 128 --dropout 0.1 --lr 0.002 \
  --batch-size 64 --valid-every 200 --valid-max-sentences 200 --max-time "$minutes" --seed 1 --device "$device"
stage "4. translate the test set"
step nmtkit translate -m "$work/model/best.pt" --beam 5 --device "$device" -i "$work/text/test.en" \
  -o "$work/test.hyp.de"
if [ "$dry" = 0 ]; then
  echo "== first test translations (source | output | reference)"
  paste -d'|' <(head -5 "$work/text/test.en") <(head -5 "$work/test.hyp.de") <(head -5 "$work/text/test.de")
  echo "== test scores"
fi
step nmtkit score --metric bleu -r "$work/text/test.de" -i "$work/test.hyp.de"
step nmtkit score --metric chrf -r "$work/text/test.de" -i "$work/test.hyp.de"
