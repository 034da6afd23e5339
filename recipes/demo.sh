#!/usr/bin/env bash
# The embedded demo: generate an English->German numbers corpus, preprocess it, train
# rnnsearch for about 90 seconds on the CPU, translate the test set and score it.
# Usage: recipes/demo.sh [WORKDIR]   (default: ./nmtkit-demo; it is replaced)
set -euo pipefail
work=${1:-nmtkit-demo}
minutes=${DEMO_MINUTES:-1.5}
rm -rf "$work"
nmtkit demo-corpus "$work/text"
nmtkit preprocess --train "$work/text/train" --valid "$work/text/valid" --test "$work/text/test" \
  --src en --tgt de --vocab word:1000 -o "$work/data"
nmtkit train --data "$work/data" --save-dir "$work/model" --arch rnnsearch \
  --emb-size 64 --enc-size 128 --dec-size 128 --dropout 0.1 --lr 0.002 \
  --batch-size 64 --valid-every 200 --valid-max-sentences 200 --max-time "$minutes" --seed 1
nmtkit translate -m "$work/model/best.pt" --beam 5 -i "$work/text/test.en" -o "$work/test.hyp.de"
echo "== first test translations (source | output | reference)"
paste -d'|' <(head -5 "$work/text/test.en") <(head -5 "$work/test.hyp.de") <(head -5 "$work/text/test.de")
echo "== test scores"
nmtkit score --metric bleu -r "$work/text/test.de" -i "$work/test.hyp.de"
nmtkit score --metric chrf -r "$work/text/test.de" -i "$work/test.hyp.de"
