#!/usr/bin/env bash
# Multimodal translation with several encoders: multi-source-attention.txt §4.1 and Table 1 (MMT columns) on
# Multi30k task 1, English -> German with the image (29,000 train, 1,014 val, 1,000 test2016 sentences and images).
# Steps: the data (Multi30k's raw text and image lists, the Flickr30k images, VGG16 weights); a corpus of the text,
# segmented by BPE of 20,000 units shared between source and target (spm-bpe, joint), and the images' VGG16
# conv5_3 features (14 x 14 x 512 at 224 px, no fine-tuning); the text-only baseline (--encoders src) and one
# multi-source model per row of Table 1 (CONFIGS); test2016 translated by each; BLEU (sacrebleu, cased, its 13a
# tokeniser, on the raw text: the paper does not say how it tokenised or cased). METEOR, Table 1's other MMT column,
# is not available in nmtkit: only the paper's is printed. Prints Table 1's MMT columns beside ours (the paper's
# text-only baseline: BLEU 33.0).
#
# Usage: recipes/multi30k_mmt.sh [--dry-run] [--gpus N] [WORKDIR]   (default WORKDIR ./multi30k-mmt)
#   --dry-run  prints each step's command and runs none (creates nothing)
#   --gpus N   trains under 'torchrun --nproc-per-node N -m nmtkit train' (one process per GPU)
# Inputs, each a local path or a URL (downloaded once into WORKDIR/downloads and checked):
#   MULTI30K          Multi30k's data/task1 folder (a clone of github.com/multi30k/dataset) or its URL: the recipe
#                     reads raw/{train,val,test_2016_flickr}.{en,de}.gz (checked with gzip -t) and
#                     image_splits/{train,val,test_2016_flickr}.txt, the image of each line
#                     [default https://raw.githubusercontent.com/multi30k/dataset/master/data/task1]
#   FLICKR30K_IMAGES  flickr30k-images.tar.gz, or the unpacked folder of the .jpg files. The images are given out
#                     by their authors after accepting their terms (https://shannon.cs.illinois.edu/DenotationGraph/);
#                     there is no default. (The features of all splits take about 6 GB.)
#   VGG16_WEIGHTS     torchvision's ImageNet VGG16 state dict, checked against the SHA-256 prefix in its name as
#                     torch.hub does [default https://download.pytorch.org/models/vgg16-397923af.pth]
# Settings (the paper's where it gives them): CONFIGS, the systems to train (default all, in Table 1's order):
# text concat flat flat-sent flat-share flat-share-sent hier hier-sent hier-share hier-share-sent ("text": the
# text-only baseline; "share": the projections for energies and contexts shared, "sent": the sentinel); the
# decoder is a conditional GRU (cgru), but concat's a plain GRU, as the paper reports them; SIZES (default
# "--emb-size 300 --enc-size 300 --dec-size 500 --att-size 500": BiGRU text encoder of 300 per direction, 300-dim
# embeddings, 500 decoder units, an attention projection of 500); Adam at 1e-4 (no decay); STEPS (default 25000:
# about 50 epochs of BATCH (64) sentences, Figure 1's horizon) updates per model; VALID_EVERY (1000); dropout 0.2
# (the paper gives none); VOCAB (20000 BPE units); IMAGE_SIZE (224); BEAM (5; the paper does not say);
# DEVICE (auto); DOWNLOADER (default "curl -fL --retry 3 -o": gets DEST URL).
# A step whose outputs exist is skipped, so a run that failed or was stopped resumes where it was (a stopped
# training goes on with --resume); a failed step stops the recipe with one line naming the step.
# The machinery (options, steps, downloads, training) is recipes/lib.sh's.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
options multi30k-mmt "$@"
whole_numbers STEPS BATCH VALID_EVERY VOCAB IMAGE_SIZE
multi30k=${MULTI30K:-https://raw.githubusercontent.com/multi30k/dataset/master/data/task1}
images_in=${FLICKR30K_IMAGES:-}
weights_in=${VGG16_WEIGHTS:-https://download.pytorch.org/models/vgg16-397923af.pth}
read -r -a sizes <<< "${SIZES:---emb-size 300 --enc-size 300 --dec-size 500 --att-size 500}"
all="text concat flat flat-sent flat-share flat-share-sent hier hier-sent hier-share hier-share-sent"
read -r -a configs <<< "${CONFIGS:-$all}"

# Table 1: combination, share, sentinel; the paper's test BLEU and METEOR
declare -A combination=([text]=concat [concat]=concat [flat]=flat [flat-sent]=flat [flat-share]=flat
  [flat-share-sent]=flat [hier]=hierarchical [hier-sent]=hierarchical [hier-share]=hierarchical
  [hier-share-sent]=hierarchical)
declare -A paper=([text]="33.0 -" [concat]="31.4 48.0" [flat]="30.2 46.5" [flat-sent]="29.3 45.4"
  [flat-share]="30.9 47.1" [flat-share-sent]="29.4 46.9" [hier]="32.1 49.1" [hier-sent]="28.1 45.5"
  [hier-share]="26.1 42.4" [hier-share-sent]="22.0 38.5")
for name in "${configs[@]}"; do
  [ -n "${combination[$name]:-}" ] || { echo "error: CONFIGS: unknown system '$name' (one of: $all)" >&2; exit 2; }
done
cell() { if [ "$1" = concat ]; then echo gru; else echo cgru; fi; }
flags() {  # flags NAME: the options of the system NAME
  local f=(--combination "${combination[$1]}" --decoder-cell "$(cell "$1")")
  [ "$1" = text ] && f+=(--encoders src)
  if [ "${combination[$1]}" != concat ]; then
    if [[ $1 == *-share* ]]; then f+=(--share-projections); else f+=(--no-share-projections); fi
    if [[ $1 == *-sent ]]; then f+=(--sentinel); else f+=(--no-sentinel); fi
  fi
  echo "${f[@]}"
}

text=$work/text
declare -A official=([train]=train [val]=val [test]=test_2016_flickr)
declare -A count=([train]=29000 [val]=1014 [test]=1000)
for split in train val test; do  # the Multi30k files of the text not made yet
  [ -e "$text/$split.en" ] && [ -e "$text/$split.de" ] && [ -e "$text/$split.img" ] && continue
  input MULTI30K "$multi30k/raw/${official[$split]}".{en,de}.gz "$multi30k/image_splits/${official[$split]}.txt"
done
if [ ! -f "$work/data/manifest.json" ]; then  # the images and weights are needed for the features only
  needed "$images_in" "FLICKR30K_IMAGES: give flickr30k-images.tar.gz or the folder of the images (see the header)"
  input FLICKR30K_IMAGES "$images_in"
  input VGG16_WEIGHTS "$weights_in"
fi
inputs_found

stage "1. data"
[ -d "$text" ] || step mkdir -p "$text"
for split in train val test; do
  for lang in en de; do
    [ -e "$text/$split.$lang" ] && continue
    gz=$(fetch "$multi30k/raw/${official[$split]}.$lang.gz")
    into "$text/$split.$lang" gzip -dc "$gz"
  done
  if [ ! -e "$text/$split.img" ]; then  # the image of each line
    list=$(fetch "$multi30k/image_splits/${official[$split]}.txt")
    into "$text/$split.img" cat "$list"
  fi
  [ "$dry" = 1 ] && continue
  same_lines "$text/$split.en" "$text/$split.de" "$text/$split.img"
  n=$(wc -l < "$text/$split.en")
  [ "$n" = "${count[$split]}" ] || echo "note: $split has $n sentences (Multi30k: ${count[$split]})" >&2
done
if [ ! -f "$work/data/manifest.json" ]; then
  flickr30k_images "$images_in"
  weights=$(fetch "$weights_in")

  stage "2. corpus: BPE text, VGG16 conv5_3 features of the images"
  step nmtkit preprocess --train "$text/train" --valid "$text/val" --test "$text/test" --src en --src-images img \
    --tgt de --images "$images" --cnn-weights "$weights" --image-size "${IMAGE_SIZE:-224}" --device "$device" \
    --vocab "spm-bpe:${VOCAB:-20000}" --joint --max-len 0 -o "$work/data"
fi

for name in "${configs[@]}"; do
  stage "3. train $name"
  read -r -a extra <<< "$(flags "$name")"
  train "$work/models/$name" --data "$work/data" --arch multi-source "${sizes[@]}" "${extra[@]}" \
    --optimizer adam --lr 1e-4 --lr-decay 1 --dropout 0.2 --batch-size "${BATCH:-64}" \
    --max-steps "${STEPS:-25000}" --valid-every "${VALID_EVERY:-1000}" --patience 0 --device "$device"
done

scores=$work/scores
for dir in "$work/out" "$scores"; do [ -d "$dir" ] || step mkdir -p "$dir"; done
for name in "${configs[@]}"; do
  stage "4. translate test2016 and score it: $name"
  out=$work/out/$name.test.de
  inputs=(-i "$work/data/test.en"); [ "$name" = text ] || inputs+=(-i "$work/data/test.img")
  [ -e "$out" ] || step nmtkit translate -m "$work/models/$name/best.pt" --beam "${BEAM:-5}" --device "$device" \
    "${inputs[@]}" -o "$out"
  into "$scores/$name.bleu" nmtkit score --metric bleu -r "$work/data/test.de" -i "$out" --score-only
done
[ "$dry" = 1 ] && exit 0

echo "== Table 1, MMT columns (multi-source-attention.txt), and this run: test2016 BLEU (METEOR: not in nmtkit)"
row() { printf '%-16s %-5s %-5s %-5s   %5s %6s   %6s\n' "$@"; }
row "" cell share sent. paper "" nmtkit
row "" "" "" "" BLEU METEOR BLEU
for name in "${configs[@]}"; do
  share=no sent=no
  [[ $name == *-share* ]] && share=yes
  [[ $name == *-sent ]] && sent=yes
  [ "${combination[$name]}" = concat ] && share=- sent=-
  read -r pbleu pmeteor <<< "${paper[$name]}"
  label=$name; [ "$name" = text ] && label="text only"
  row "$label" "$(cell "$name")" "$share" "$sent" "$pbleu" "$pmeteor" "$(cat "$scores/$name.bleu")"
done
