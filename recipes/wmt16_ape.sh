#!/usr/bin/env bash
# Automatic post-editing with several encoders: multi-source-attention.txt §4.2 and Table 1 (APE columns) on the
# WMT16 APE shared task (English-German, IT domain, tokenised triplets source / MT output / human post-edit:
# 12,000 train, 1,000 dev, 2,000 test; the paper's §4.2 swaps the dev and test counts, the task's page gives these).
# The target is the edit operations turning the MT output into the post-edit (preprocess --ape-edits mt); the
# models write the edited MT. Steps: the data; a word-level corpus; the do-nothing baseline (the MT output as it is
# against the post-edits); one multi-source model per row of Table 1 (CONFIGS); the test set post-edited by each;
# case-sensitive HTER (nmtkit score --metric ter, sacrebleu's TER, as the task's tercom) and BLEU on the tokens
# as they are (--tokenize none). Prints Table 1's APE columns and the do-nothing line (paper: HTER 24.8) beside ours.
#
# Usage: recipes/wmt16_ape.sh [--dry-run] [--gpus N] [WORKDIR]     (default WORKDIR ./wmt16-ape)
#   --dry-run  prints each step's command and runs none (creates nothing)
#   --gpus N   trains under 'torchrun --nproc-per-node N -m nmtkit train' (one process per GPU)
# Inputs, each a local path or a URL (downloaded once into WORKDIR/downloads, checked, then unpacked):
#   WMT16_APE  the data: a folder, or one or more archives (.zip, .tar.gz, .tgz; several separated by spaces, a
#              single one's path may hold spaces),
#              holding files named {train,dev,test}.{src,mt,pe} somewhere inside. The task's data is on LINDAT,
#              http://hdl.handle.net/11372/LRT-1632 (linked from http://www.statmt.org/wmt16/ape-task.html), as
#              TrainDev.zip (train and dev), Test.zip (test source and MT) and test_pe.zip (test post-edits): give
#              the three, e.g. WMT16_APE="TrainDev.zip Test.zip test_pe.zip". There is no default (the direct file
#              addresses could not be confirmed); if the archives name the files otherwise, unpack them into one
#              folder as train.src, train.mt, ..., test.pe and give the folder.
# Settings (the paper's where it gives them): CONFIGS, the rows of Table 1 to train (default all nine, in its
# order): concat flat flat-sent flat-share flat-share-sent hier hier-sent hier-share hier-share-sent ("share": the
# projections for energies and contexts shared, "sent": the sentinel); SIZES (default "--emb-size 300 --enc-size
# 300 --dec-size 300 --att-size 500": BiGRU encoders of 300 per direction, 300-dim embeddings, a GRU decoder of 300,
# an attention projection of 500); Adam at 1e-4 (no decay); STEPS (default 10000: about 50 epochs of BATCH (64)
# triplets, Figure 1's horizon) updates per model; VALID_EVERY (1000); dropout 0.2 (the paper gives none);
# VOCAB (30000 words per stream: the paper gives no size; larger than the training data's vocabulary, so every
# training word, and preprocess may warn that a list came out shorter); BEAM (5; the paper does not say);
# DEVICE (auto); DOWNLOADER (default "curl -fL --retry 3 -o": gets DEST URL).
# A step whose outputs exist is skipped, so a run that failed or was stopped resumes where it was (a stopped
# training goes on with --resume); a failed step stops the recipe with one line naming the step.
# The machinery (options, steps, downloads, training) is recipes/lib.sh's.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
options wmt16-ape "$@"
whole_numbers STEPS BATCH VALID_EVERY VOCAB
data_in=${WMT16_APE:-}
read -r -a sizes <<< "${SIZES:---emb-size 300 --enc-size 300 --dec-size 300 --att-size 500}"
read -r -a configs <<< "${CONFIGS:-concat flat flat-sent flat-share flat-share-sent hier hier-sent hier-share hier-share-sent}"

# Table 1: combination, share, sentinel; the paper's test BLEU and HTER
declare -A combination=([concat]=concat [flat]=flat [flat-sent]=flat [flat-share]=flat [flat-share-sent]=flat
  [hier]=hierarchical [hier-sent]=hierarchical [hier-share]=hierarchical [hier-share-sent]=hierarchical)
declare -A paper=([concat]="62.3 24.4" [flat]="62.6 24.2" [flat-sent]="62.3 24.3" [flat-share]="62.4 24.4"
  [flat-share-sent]="62.5 24.2" [hier]="62.3 24.1" [hier-sent]="62.6 24.1" [hier-share]="62.4 24.3"
  [hier-share-sent]="62.5 24.1")
for name in "${configs[@]}"; do
  [ -n "${combination[$name]:-}" ] || { echo "error: CONFIGS: unknown row '$name' (one of: concat flat flat-sent \
flat-share flat-share-sent hier hier-sent hier-share hier-share-sent)" >&2; exit 2; }
done
flags() {  # flags NAME: the options of Table 1's row NAME
  local f=(--combination "${combination[$1]}")
  if [ "$1" != concat ]; then
    if [[ $1 == *-share* ]]; then f+=(--share-projections); else f+=(--no-share-projections); fi
    if [[ $1 == *-sent ]]; then f+=(--sentinel); else f+=(--no-sentinel); fi
  fi
  echo "${f[@]}"
}

text=$work/text
have_text=1
for split in train dev test; do for ext in src mt pe; do [ -f "$text/$split.$ext" ] || have_text=0; done; done
if [ -e "$data_in" ]; then items=("$data_in")  # (one folder or archive, whose path may hold spaces)
else read -r -a items <<< "$data_in"; fi
if [ "$have_text" = 0 ]; then  # (the data is read for the text alone: a run that made it goes on without it)
  needed "$data_in" "WMT16_APE: give the WMT16 APE data, a folder or archives (http://hdl.handle.net/11372/LRT-1632: \
TrainDev.zip Test.zip test_pe.zip; see the header)"
  input WMT16_APE "${items[@]}"
fi
inputs_found

stage "1. data"
if [ "$have_text" = 0 ]; then
  roots=()
  for item in "${items[@]}"; do
    path=$(fetch "$item")
    case $path in
    *.zip|*.tar.gz|*.tgz)
      out=$(unpacked_dir "$(basename "$path")")
      roots+=("$out")
      unpack "$path" "$out" ;;
    *) roots+=("$path") ;;
    esac
  done
  step mkdir -p "$text"
  for split in train dev test; do
    for ext in src mt pe; do
      [ -f "$text/$split.$ext" ] && continue
      found=$(find "${roots[@]}" -type f -name "$split.$ext" 2> /dev/null | sort || true)
      if [ "$dry" = 1 ] && [ -z "$found" ]; then  # not unpacked yet
        echo "cp <the $split.$ext under ${roots[*]}> $text/$split.$ext"; continue
      fi
      if [ -z "$found" ] || [ "$(wc -l <<< "$found")" != 1 ]; then
        fail "WMT16_APE: $([ -z "$found" ] && echo no || echo more than one) file named $split.$ext in\
 ${roots[*]} (see the header)"
      fi
      step cp "$found" "$text/$split.$ext.part"
      step mv "$text/$split.$ext.part" "$text/$split.$ext"
    done
  done
fi
if [ "$dry" = 0 ]; then
  for split in train:12000 dev:1000 test:2000; do
    name=${split%:*}
    same_lines "$text/$name.src" "$text/$name.mt" "$text/$name.pe"
    n=$(wc -l < "$text/$name.src")
    [ "$n" = "${split#*:}" ] || echo "note: $name has $n triplets (the WMT16 APE data: ${split#*:})" >&2
  done
fi

stage "2. corpus: edit operations as the target, word vocabularies"
[ -f "$work/data/manifest.json" ] || step nmtkit preprocess --train "$text/train" --valid "$text/dev" \
  --test "$text/test" --src src --src mt --tgt pe --ape-edits mt --vocab "word:${VOCAB:-30000}" --max-len 0 \
  -o "$work/data"

scores=$work/scores
score() {  # score NAME HYP: case-sensitive HTER and BLEU on the tokens against the test post-edits
  into "$scores/$1.ter" nmtkit score --metric ter -r "$text/test.pe" -i "$2" --score-only
  into "$scores/$1.bleu" nmtkit score --metric bleu --tokenize none -r "$text/test.pe" -i "$2" --score-only
}
stage "3. do nothing: the MT output as it is"
[ -d "$scores" ] || step mkdir -p "$scores"
score do-nothing "$text/test.mt"

for name in "${configs[@]}"; do
  stage "4. train $name"
  read -r -a extra <<< "$(flags "$name")"
  train "$work/models/$name" --data "$work/data" --arch multi-source "${sizes[@]}" --decoder-cell gru \
    "${extra[@]}" --optimizer adam --lr 1e-4 --lr-decay 1 --dropout 0.2 --batch-size "${BATCH:-64}" \
    --max-steps "${STEPS:-10000}" --valid-every "${VALID_EVERY:-1000}" --patience 0 --device "$device"
done

[ -d "$work/out" ] || step mkdir -p "$work/out"
for name in "${configs[@]}"; do
  stage "5. post-edit the test set and score it: $name"
  out=$work/out/$name.test.pe
  [ -e "$out" ] || step nmtkit translate -m "$work/models/$name/best.pt" --beam "${BEAM:-5}" --device "$device" \
    -i "$text/test.src" -i "$text/test.mt" -o "$out"
  score "$name" "$out"
done
[ "$dry" = 1 ] && exit 0

echo "== Table 1, APE columns (multi-source-attention.txt), and this run: test BLEU and HTER"
row() { printf '%-16s %-5s %-5s   %5s %5s   %6s %6s\n' "$@"; }
row "" share sent. "paper" "" nmtkit ""
row "" "" "" BLEU HTER BLEU HTER
row "do nothing" "" "" - 24.8 "$(cat "$scores/do-nothing.bleu")" "$(cat "$scores/do-nothing.ter")"
for name in "${configs[@]}"; do
  share=no sent=no
  [[ $name == *-share* ]] && share=yes
  [[ $name == *-sent ]] && sent=yes
  [ "$name" = concat ] && share=- sent=-
  read -r pbleu pter <<< "${paper[$name]}"
  row "$name" "$share" "$sent" "$pbleu" "$pter" "$(cat "$scores/$name.bleu")" "$(cat "$scores/$name.ter")"
done
