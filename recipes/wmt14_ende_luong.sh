#!/usr/bin/env bash
# Global and local attention on WMT'14 English -> German: Luong, Pham and Manning (2015), "Effective Approaches to
# Attention-based Neural Machine Translation" (global-local-attention.md holds its §3), Table 4: 4-layer LSTMs of
# 1000 units with input feeding, source reversed, dropout 0.2, each with one attention (global with the location,
# dot or general score; local-m or local-p with dot or general); perplexity and tokenised case-sensitive BLEU on
# newstest2014 before and after <unk> replacement (paper: global (location) 18.1 / 19.3 ... local-p (general)
# 19.0 / 20.9). The data as the authors published it (Stanford NMT page): WMT'14 training data, 4.5M pairs,
# tokenised (compound hyphens split as "##AT##-##AT##"), their 50,000-word vocabularies, newstest2013 to validate,
# newstest2014 (2,737 sentences) to test and their dictionary for the <unk> replacement.
# The project's copy of the paper (../shared/papers/global-local-attention.md) has no experiments section: these
# settings and the Table 4 numbers printed beside ours are from the published paper (arXiv:1508.04025).
#
# Steps: the data, every source sentence reversed (Table 1's "reverse"); a corpus of pairs of at most 50 words with
# the authors' vocabularies; per variant (VARIANTS), 8 epochs of SGD at 1.0 (recipes/configs/wmt14_ende_luong.yaml)
# and then HALVINGS (4) epochs at 0.5, 0.25, ..., each a run warm-started from the last (§4.1: 12 epochs, the
# rate halved every epoch after the 8th); the model of the last epoch translates newstest2014 (beam BEAM), <unk>
# replaced by the dictionary translation of the most attended source word (§4.2 of the paper, after Luong et al.
# 2015b); BLEU with sacrebleu --tokenize none against the tokenised references (multi-bleu.perl's), perplexity.
#
# Usage: recipes/wmt14_ende_luong.sh [--dry-run] [--gpus N] [WORKDIR]   (default WORKDIR ./wmt14-ende-luong)
#   --dry-run  prints each step's command and runs none (creates nothing)
#   --gpus N   trains under 'torchrun --nproc-per-node N -m nmtkit train' (one process per GPU)
# Inputs, a local path or a URL (each file downloaded once into WORKDIR/downloads):
#   STANFORD_WMT14  a folder holding train.{en,de}, newstest2013.{en,de}, newstest2014.{en,de}, vocab.50K.{en,de}
#                   and dict.en-de [default https://nlp.stanford.edu/projects/nmt/data/wmt14.en-de]
# Settings: VARIANTS, Table 4's rows to train (default all seven, in its order): global-location global-dot
# global-general local-m-dot local-m-general local-p-dot local-p-general (also global-concat, local-m-concat,
# local-p-concat: the paper gives only their perplexities, in a footnote of §5.3); HALVINGS (4); BEAM (12, the paper
# does not say); OVERRIDES, options added to every training after the config (e.g. "--max-steps 1000 --layers 2"
# for a trial); DEVICE (auto); DOWNLOADER (default "curl -fL --retry 3 -o": gets DEST URL).
# Output: WORKDIR/text/{train,dev,test}.{en,de} (en reversed), WORKDIR/data, WORKDIR/models/VARIANT/lr-RATE (a
# run per learning rate), WORKDIR/out/VARIANT.test{,.unk}.de and VARIANT.att.h5, WORKDIR/scores/; Table 4 beside
# ours on standard output.
# A step whose outputs exist is skipped, so a run that failed or was stopped resumes where it was (a stopped
# training goes on with --resume); a failed step stops the recipe with one line naming the step. The machinery
# (options, steps, downloads, training) is recipes/lib.sh's.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
options wmt14-ende-luong "$@"
config=$(cd "$(dirname "$0")" && pwd)/configs/wmt14_ende_luong.yaml
stanford=${STANFORD_WMT14:-https://nlp.stanford.edu/projects/nmt/data/wmt14.en-de}
halvings=${HALVINGS:-4}
read -r -a overrides <<< "${OVERRIDES:-}"

# Table 4: perplexity, BLEU, BLEU with <unk> replaced ("x": the paper's local-m (dot) models did not train)
declare -A paper=([global-location]="6.4 18.1 19.3" [global-dot]="6.1 18.6 20.5" [global-general]="6.1 17.3 19.1"
  [local-m-dot]=">7.0 x x" [local-m-general]="6.2 18.6 20.4" [local-p-dot]="6.6 18.0 19.6"
  [local-p-general]="5.9 19.0 20.9" [global-concat]="6.7 - -" [local-m-concat]="7.1 - -" [local-p-concat]="7.1 - -")
table4="global-location global-dot global-general local-m-dot local-m-general local-p-dot local-p-general"
read -r -a variants <<< "${VARIANTS:-$table4}"
for name in "${variants[@]}"; do
  [ -n "${paper[$name]:-}" ] || { echo "error: VARIANTS: unknown variant '$name' (one of: ${!paper[*]})" >&2; exit 2; }
done
[[ $halvings =~ ^[0-9]+$ ]] || { echo "error: HALVINGS: expects a number of epochs, got '$halvings'" >&2; exit 2; }

reversed() { awk '{ for (i = NF; i > 0; i--) printf "%s%s", $i, (i > 1 ? " " : ""); print "" }' "$1"; }

stanford_files=(train.{en,de} newstest2013.{en,de} newstest2014.{en,de} vocab.50K.{en,de} dict.en-de)
for name in "${stanford_files[@]}"; do input STANFORD_WMT14 "$stanford/$name"; done
inputs_found

stage "1. data: the authors' WMT'14 English-German, the source reversed"
text=$work/text
declare -A file
for name in "${stanford_files[@]}"; do
  file[$name]=$(fetch "$stanford/$name")
done
[ -d "$text" ] || step mkdir -p "$text"
for split in train:train dev:newstest2013 test:newstest2014; do
  into "$text/${split%:*}.en" reversed "${file[${split#*:}.en]}"
  into "$text/${split%:*}.de" cat "${file[${split#*:}.de]}"
  same_lines "$text/${split%:*}.en" "$text/${split%:*}.de"
done

stage "2. corpus: the authors' 50,000-word vocabularies, pairs of at most 50 words"
[ -f "$work/data/manifest.json" ] || step nmtkit preprocess --train "$text/train" --valid "$text/dev" --src en \
  --tgt de --src-vocab "${file[vocab.50K.en]}" --tgt-vocab "${file[vocab.50K.de]}" --max-len 50 -o "$work/data"

declare -A final
for name in "${variants[@]}"; do
  stage "3. train $name: 8 epochs at the learning rate 1, then $halvings halving it each epoch"
  attention=(--attention "${name%-*}" --global-attention "${name##*-}")
  models=$work/models/$name
  train "$models/lr-1" --config "$config" "${attention[@]}" --data "$work/data" --device "$device" \
    "${overrides[@]}"
  last=$models/lr-1/last.pt
  for ((k = 1; k <= halvings; k++)); do
    lr=$(awk -v k="$k" 'BEGIN { print 1 / 2 ^ k }')
    train "$models/lr-$lr" --config "$config" "${attention[@]}" --lr "$lr" --max-epochs 1 --seed $((1 + k)) \
      --data "$work/data" --device "$device" --init-from "$last" "${overrides[@]}"
    last=$models/lr-$lr/last.pt
  done
  final[$name]=$last
done

out=$work/out scores=$work/scores
for dir in "$out" "$scores"; do [ -d "$dir" ] || step mkdir -p "$dir"; done
for name in "${variants[@]}"; do
  stage "4. translate newstest2014, replace <unk>, score: $name"
  translate_unk_score "$name" "${final[$name]}" "$text/test.en" "$text/test.de" "${file[dict.en-de]}" "$out" "$scores"
done
[ "$dry" = 1 ] && exit 0

echo "== Table 4 (Luong et al. 2015), and this run: newstest2014, perplexity and tokenised BLEU (+unk: replaced)"
row() { printf '%-18s %6s %6s %6s   %6s %6s %6s\n' "$@"; }
row "" paper "" "" nmtkit "" ""
row "" ppl BLEU +unk ppl BLEU +unk
for name in "${variants[@]}"; do
  read -r ppl bleu unk <<< "${paper[$name]}"
  row "${name%-*} (${name##*-})" "$ppl" "$bleu" "$unk" "$(cat "$scores/$name.ppl")" \
    "$(cat "$scores/$name.test.bleu")" "$(cat "$scores/$name.test.unk.bleu")"
done
