#!/usr/bin/env bash
# Target-target attention for image captioning: target-target-attention.txt §4 and Table 3 on Flickr30k.
# Show, Attend and Tell with soft attention (the baseline, "source-attn"), then the same with target attention
# warm-started from it ("Ours"), on Karpathy's split (29,000 / 1,014 / 1,000 images), VGG16 conv5_3 features
# (14 x 14 x 512 at 224 px), a 10k-word vocabulary, a 512 LSTM, dropout 0.5 before the softmax, beam 10; the
# paper's optimisers (Adadelta for the baseline, then plain SGD at a fixed 0.05). Prints Table 3 beside ours.
#
# Usage: recipes/flickr30k.sh [--dry-run] [--gpus N] [WORKDIR]    (default WORKDIR ./flickr30k)
#   --dry-run  prints each step's command and runs none (creates nothing)
#   --gpus N   trains under 'torchrun --nproc-per-node N -m nmtkit train' (one process per GPU)
# Inputs, each a local path or a URL (downloaded once into WORKDIR/downloads and checked):
#   FLICKR30K_IMAGES  flickr30k-images.tar.gz, or the unpacked folder of the .jpg files. The images are given out
#                     by their authors after accepting their terms (https://shannon.cs.illinois.edu/DenotationGraph/);
#                     there is no default.
#   KARPATHY_SPLITS   caption_datasets.zip or dataset_flickr30k.json
#                     [default https://cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip]
#   VGG16_WEIGHTS     torchvision's ImageNet VGG16 state dict, checked against the SHA-256 prefix in its name as
#                     torch.hub does [default https://download.pytorch.org/models/vgg16-397923af.pth]
# Settings: STEPS_BASE (default 150000) and STEPS_TATT (default 50000) updates of batches of BATCH (64) captions
# (the paper: about a day each on a GPU); DEVICE (auto); IMAGE_SIZE (224); SIZES (model sizes,
# default "--emb-size 512 --dec-size 512"); DOWNLOADER (default "curl -fL --retry 3 -o": gets DEST URL).
# A step whose outputs exist is skipped, so a run that failed or was stopped resumes where it was (a stopped
# training goes on with --resume); a failed step stops the recipe with one line naming the step.
# The machinery (options, steps, downloads, training) is recipes/lib.sh's.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
options flickr30k "$@"
whole_numbers BATCH IMAGE_SIZE STEPS_BASE STEPS_TATT
images_in=${FLICKR30K_IMAGES:-}
splits_in=${KARPATHY_SPLITS:-https://cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip}
weights_in=${VGG16_WEIGHTS:-https://download.pytorch.org/models/vgg16-397923af.pth}
read -r -a sizes <<< "${SIZES:---emb-size 512 --dec-size 512}"

if [ ! -f "$work/data/manifest.json" ]; then  # the data is needed for the features and corpus only
  needed "$images_in" "FLICKR30K_IMAGES: give flickr30k-images.tar.gz or the folder of the images (see the header)"
  input FLICKR30K_IMAGES "$images_in"
  input KARPATHY_SPLITS "$splits_in"
  input VGG16_WEIGHTS "$weights_in"
fi
inputs_found

stage "1. data"
if [ ! -f "$work/data/manifest.json" ]; then
  flickr30k_images "$images_in"
  splits=$(fetch "$splits_in")
  if [[ $splits == *.zip ]]; then
    unpack "$splits" "$work/splits.zip.d"
    splits=$work/splits.zip.d/dataset_flickr30k.json
  fi
  weights=$(fetch "$weights_in")
  if [ ! -d "$work/lists" ]; then
    step python -m nmtkit.data.karpathy "$splits" "$work/lists.part"
    step mv "$work/lists.part" "$work/lists"
  fi

  stage "2. features and corpus"
  step nmtkit preprocess --captions "$work/lists/captions.tsv" --images "$images" \
    --train "$work/lists/train.txt" --valid "$work/lists/dev.txt" --test "$work/lists/test.txt" --tgt en \
    --vocab word:10000 --max-len 0 --image-size "${IMAGE_SIZE:-224}" --cnn-weights "$weights" -o "$work/data"
fi

common=(--data "$work/data" --arch show-attend-tell "${sizes[@]}" --dropout 0.5 --batch-size "${BATCH:-64}"
        --device "$device" --valid-every 2000 --valid-beam 3 --valid-max-sentences 500 --patience 0)
stage "3. source-attn: the baseline (Adadelta)"
train "$work/base" "${common[@]}" --optimizer adadelta --max-steps "${STEPS_BASE:-150000}"
stage "4. Ours: target attention, warm-started from the baseline (SGD, fixed learning rate 0.05)"
train "$work/tatt" "${common[@]}" --target-attention --init-from "$work/base/best.pt" --optimizer sgd --lr 0.05 \
  --lr-decay 1 --max-steps "${STEPS_TATT:-50000}"

stage "5. test: beam 10"
scores=$work/scores
[ -d "$scores" ] || step mkdir -p "$scores"
for system in base tatt; do
  out=$work/$system.test.en refs=$work/data/test.en
  [ -e "$out" ] || step nmtkit caption -m "$work/$system/best.pt" --beam 10 --device "$device" \
    -i "$work/data/test.images" -o "$out"
  # BLEU-3 and BLEU-4 (without brevity penalty), CIDEr-D, perplexity
  for n in 3 4; do
    into "$scores/$system.bleu$n" nmtkit score --metric bleu --max-ngram "$n" --no-brevity-penalty --tab-refs \
      -r "$refs" -i "$out" --score-only
  done
  into "$scores/$system.cider" nmtkit score --metric cider --tab-refs -r "$refs" -i "$out" --score-only
  into "$scores/$system.ppl" nmtkit score --metric ppl -m "$work/$system/best.pt" --src "$work/data/test.images" \
    --tab-refs -r "$refs" --score-only
done
[ "$dry" = 1 ] && exit 0
score() {  # score SYSTEM: BLEU-3 BLEU-4 CIDEr-D perplexity
  printf '%s %s %s %s' "$(cat "$scores/$1.bleu3")" "$(cat "$scores/$1.bleu4")" "$(cat "$scores/$1.cider")" \
    "$(cat "$scores/$1.ppl")"
}
read -r b3 b4 cider ppl <<< "$(score base)"
read -r t3 t4 tcider tppl <<< "$(score tatt)"
echo "== Table 3 (target-target-attention.txt) and this run"
printf '%-22s %7s %7s %7s %10s\n' "" BLEU-3 BLEU-4 CIDEr perplexity
printf '%-22s %7s %7s %7s %10s\n' "paper: source-attn" 28.3 19.0 37.6 28.56 "paper: Ours" 29.6 20.5 40.4 23.06
printf '%-22s %7s %7s %7s %10s\n' "nmtkit: source-attn" "$b3" "$b4" "$cider" "$ppl" "nmtkit: Ours" "$t3" "$t4" \
  "$tcider" "$tppl"
