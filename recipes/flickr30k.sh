#!/usr/bin/env bash
# Target-target attention for image captioning: target-target-attention.txt §4 and Table 3 on Flickr30k.
# Show, Attend and Tell with soft attention (the baseline, "source-attn"), then the same with target attention
# warm-started from it ("Ours"), on Karpathy's split (29,000 / 1,014 / 1,000 images), VGG16 conv5_3 features
# (14 x 14 x 512 at 224 px), a 10k-word vocabulary, a 512 LSTM, dropout 0.5 before the softmax, beam 10; the
# paper's optimisers (Adadelta for the baseline, then plain SGD at a fixed 0.05). Prints Table 3 beside ours.
#
# Usage: recipes/flickr30k.sh [--dry-run] [WORKDIR]    (default WORKDIR ./flickr30k; --dry-run prints each step)
# Inputs, each a local path or a URL (downloaded once into WORKDIR/downloads):
#   FLICKR30K_IMAGES  flickr30k-images.tar.gz, or the unpacked folder of the .jpg files. The images are given out
#                     by their authors after accepting their terms (https://shannon.cs.illinois.edu/DenotationGraph/);
#                     there is no default.
#   KARPATHY_SPLITS   caption_datasets.zip or dataset_flickr30k.json
#                     [default https://cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip]
#   VGG16_WEIGHTS     torchvision's ImageNet VGG16 state dict
#                     [default https://download.pytorch.org/models/vgg16-397923af.pth]
# Settings: STEPS_BASE (default 150000) and STEPS_TATT (default 50000) updates of batches of BATCH (64) captions
# (the paper: about a day each on a GPU); DEVICE (auto); IMAGE_SIZE (224); SIZES (model sizes,
# default "--emb-size 512 --dec-size 512"); DOWNLOADER (default "curl -fL --retry 3 -o": gets DEST URL).
set -euo pipefail
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
work=${1:-flickr30k}
downloads=$work/downloads
downloader=${DOWNLOADER:-curl -fL --retry 3 -o}
images_in=${FLICKR30K_IMAGES:-}
splits_in=${KARPATHY_SPLITS:-https://cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip}
weights_in=${VGG16_WEIGHTS:-https://download.pytorch.org/models/vgg16-397923af.pth}
device=${DEVICE:-auto}
read -r -a sizes <<< "${SIZES:---emb-size 512 --dec-size 512}"

step() {  # run a command, or print it with --dry-run
  if [ "$dry" = 1 ]; then printf '%q ' "$@"; echo; else "$@"; fi
}

fetch() {  # fetch SRC: a local path as it is, a URL downloaded once into $downloads; prints the local path
  case $1 in
  http://*|https://*)
    local dest=$downloads/$(basename "$1")
    if [ ! -e "$dest" ]; then
      step mkdir -p "$downloads" >&2
      # shellcheck disable=SC2086
      step $downloader "$dest.part" "$1" >&2
      step mv "$dest.part" "$dest" >&2
    fi
    echo "$dest" ;;
  *)
    [ "$dry" = 1 ] || [ -e "$1" ] || { echo "error: $1: no such file or folder" >&2; exit 1; }
    echo "$1" ;;
  esac
}

if [ -z "$images_in" ]; then
  echo "error: FLICKR30K_IMAGES: give flickr30k-images.tar.gz or the folder of the images (see the header)" >&2
  exit 2
fi

echo "== 1. data" >&2
images=$(fetch "$images_in")
if [ -f "$images" ] || [ "$dry" = 1 ] && [[ $images == *.tar.gz || $images == *.tgz ]]; then
  if [ ! -d "$work/images" ]; then
    step mkdir -p "$work/images.part"
    step tar -xzf "$images" -C "$work/images.part"
    step mv "$work/images.part" "$work/images"
  fi
  images=$work/images/flickr30k-images
fi
splits=$(fetch "$splits_in")
if [[ $splits == *.zip ]]; then
  step python -m zipfile -e "$splits" "$work/splits.zip.d"
  splits=$work/splits.zip.d/dataset_flickr30k.json
fi
weights=$(fetch "$weights_in")
step python -m nmtkit.data.karpathy "$splits" "$work/lists"

echo "== 2. features and corpus" >&2
[ -f "$work/data/manifest.json" ] || step nmtkit preprocess --captions "$work/lists/captions.tsv" --images "$images" \
  --train "$work/lists/train.txt" --valid "$work/lists/dev.txt" --test "$work/lists/test.txt" --tgt en \
  --vocab word:10000 --max-len 0 --image-size "${IMAGE_SIZE:-224}" --cnn-weights "$weights" -o "$work/data"

common=(--data "$work/data" --arch show-attend-tell "${sizes[@]}" --dropout 0.5 --batch-size "${BATCH:-64}"
        --device "$device" --valid-every 2000 --valid-beam 3 --valid-max-sentences 500 --patience 0)
echo "== 3. source-attn: the baseline (Adadelta)" >&2
step nmtkit train "${common[@]}" --save-dir "$work/base" --optimizer adadelta --max-steps "${STEPS_BASE:-150000}"
echo "== 4. Ours: target attention, warm-started from the baseline (SGD, fixed learning rate 0.05)" >&2
step nmtkit train "${common[@]}" --save-dir "$work/tatt" --target-attention --init-from "$work/base/best.pt" \
  --optimizer sgd --lr 0.05 --lr-decay 1 --max-steps "${STEPS_TATT:-50000}"

echo "== 5. test: beam 10" >&2
for system in base tatt; do
  step nmtkit caption -m "$work/$system/best.pt" --beam 10 --device "$device" -i "$work/data/test.images" \
    -o "$work/$system.test.en"
done
[ "$dry" = 1 ] && exit 0
score() {  # score SYSTEM: BLEU-3 BLEU-4 (without brevity penalty) CIDEr-D perplexity
  local refs=$work/data/test.en hyp=$work/$1.test.en
  printf '%s %s %s %s' \
    "$(nmtkit score --metric bleu --max-ngram 3 --no-brevity-penalty --tab-refs -r "$refs" -i "$hyp" --score-only)" \
    "$(nmtkit score --metric bleu --max-ngram 4 --no-brevity-penalty --tab-refs -r "$refs" -i "$hyp" --score-only)" \
    "$(nmtkit score --metric cider --tab-refs -r "$refs" -i "$hyp" --score-only)" \
    "$(nmtkit score --metric ppl -m "$work/$1/best.pt" --src "$work/data/test.images" --tab-refs -r "$refs" --score-only)"
}
read -r b3 b4 cider ppl <<< "$(score base)"
read -r t3 t4 tcider tppl <<< "$(score tatt)"
echo "== Table 3 (target-target-attention.txt) and this run"
printf '%-22s %7s %7s %7s %10s\n' "" BLEU-3 BLEU-4 CIDEr perplexity
printf '%-22s %7s %7s %7s %10s\n' "paper: source-attn" 28.3 19.0 37.6 28.56 "paper: Ours" 29.6 20.5 40.4 23.06
printf '%-22s %7s %7s %7s %10s\n' "nmtkit: source-attn" "$b3" "$b4" "$cider" "$ppl" "nmtkit: Ours" "$t3" "$t4" \
  "$tcider" "$tppl"
