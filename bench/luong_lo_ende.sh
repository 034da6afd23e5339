#!/usr/bin/env bash
# luong variants and replace-unk on LibreOffice en-de with word-level vocabularies (issue 3's benchmark).
# Usage: bench/luong_lo_ende.sh [VARIANT ...]   (default: general-feed general-nofeed local-p local-p-warm)
#   Text is tokenised with sacrebleu's 13a tokenizer, vocabularies are the 10,000 most frequent
#   words per side (so <unk> occurs), and the replace-unk dictionary comes from `nmtkit align`.
#   Every variant trains for the same number of updates (STEPS): local-p-warm is general-feed for STEPS/2
#   updates and then local-p, warm-started from it, for STEPS/2 (from scratch, local-p's predicted
#   position p_t saturates at the sentence end within 100 updates; see bench/README.md). Each then
#   translates test with beam 5 and --attention-out; BLEU/chrF are printed before and after replace-unk
#   (sacrebleu 13a against the raw test.de).
# Environment: SHARED (default ../shared beside the checkout), RUNS (default bench/runs), STEPS (default 2000),
#   THREADS (default 2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$here/../../shared}
runs=${RUNS:-$here/runs}/luong
steps=${STEPS:-2000}
data=$shared/data/lo-ende
variants=("$@")
[ ${#variants[@]} -eq 0 ] && variants=(general-feed general-nofeed local-p local-p-warm)
threads=${THREADS:-2}
export OMP_NUM_THREADS=$threads
source "$here/lib.sh"

if [ ! -f "$runs/corpus/manifest.json" ]; then
  tokenized13a "$data" "$runs/tok"
  nmtkit preprocess --train "$runs/tok/train" --valid "$runs/tok/dev" --test "$runs/tok/test" --src en --tgt de \
    --vocab word:10000 --max-len 50 -o "$runs/corpus" --overwrite
fi
[ -f "$runs/lex.tsv" ] || nmtkit align --src "$runs/tok/train.en" --tgt "$runs/tok/train.de" -o "$runs/lex.tsv"

# A small model (1 layer, 256 units; 6.4M parameters) so that every variant gets several epochs in one sitting:
# on the 2-core AVX2 machine 2 layers of 512 trained at ~490 tok/s; this trained at 2,600 (general-feed, one thread,
# median of its log windows on 2026-11-23, bench/README.md).
common=(--arch luong --emb-size 128 --enc-size 128 --dec-size 256 --layers 1 --encoder-type brnn --dropout 0.2
        --batch-size 64 --optimizer adam --lr 0.001 --clip-norm 1.0 --threads "$threads" --seed 1
        --max-steps "$steps" --log-every 100 --valid-every 500 --valid-max-sentences 300 --patience 0)
for v in "${variants[@]}"; do
  case $v in
    general-feed)   opts=(--attention global --global-attention general --input-feed) ;;
    general-nofeed) opts=(--attention global --global-attention general --no-input-feed) ;;
    local-p|local-p-warm) opts=(--attention local-p --global-attention general --input-feed) ;;
    *) echo "unknown variant $v" >&2; exit 2 ;;
  esac
  out=$runs/$v
  fresh "$out"
  start=$(date +%s)
  if [ "$v" = local-p-warm ]; then  # half the budget with global attention, half with local-p from it
    fresh "$out-global"
    nmtkit train --data "$runs/corpus" --save-dir "$out-global" "${common[@]}" --max-steps $((steps / 2)) \
      --attention global --global-attention general --input-feed 2> "$runs/$v.log"
    nmtkit train --data "$runs/corpus" --save-dir "$out" "${common[@]}" "${opts[@]}" --max-steps $((steps / 2)) \
      --init-from "$out-global/last.pt" 2>> "$runs/$v.log"
  else
    nmtkit train --data "$runs/corpus" --save-dir "$out" "${common[@]}" "${opts[@]}" 2> "$runs/$v.log"
  fi
  minutes=$(( ($(date +%s) - start) / 60 ))
  nmtkit translate -m "$out/last.pt" --beam 5 --batch-size 32 --threads "$threads" -i "$runs/tok/test.en" -o "$out/test.de" \
    --attention-out "$out/test.att.h5" 2>> "$runs/$v.log"
  nmtkit replace-unk --src "$runs/tok/test.en" --attention "$out/test.att.h5" --dict "$runs/lex.tsv" \
    -i "$out/test.de" -o "$out/test.unk.de" 2>> "$runs/$v.log"
  echo "== $v: $steps updates in $minutes min; $(grep -o 'replaced .*' "$runs/$v.log" | tail -1)"
  for h in test.de test.unk.de; do
    printf '%-12s BLEU %s  chrF %s\n' "$h" \
      "$(nmtkit score --metric bleu -r "$data/test.de" -i "$out/$h" --score-only)" \
      "$(nmtkit score --metric chrf -r "$data/test.de" -i "$out/$h" --score-only)"
  done
done
