#!/usr/bin/env bash
# Captioning on the emoji images of ../shared/data/emoji (their English CLDR names as captions; issue 15).
# Usage: bench/caption_emoji.sh [features|quality|speed]
#   features: captions.tsv (image<TAB>English name), then the corpora FEATURES: features of a randomly initialised VGG16
#             (conv5_3 at 112 px, the images' own size: 7 x 7 x 512) and of a small CNN trained on the training
#             images (bench/emoji_cnn.py: 7 x 7 x 256)
#   quality:  show-attend-tell without and with target attention, seeds SEEDS (default "1 2"), STEPS updates
#             (default 1500) each, on the corpora FEATURES (default "vgg cnn"): test BLEU-3/4 without brevity penalty, CIDEr-D, perplexity
#             (last.pt, beam 5)
#   speed:    images/s of feature extraction (VGG16 on the 326 test images) and captions/s of beam 5, peak memory
# Environment: SHARED (default ../shared beside the checkout), RUNS (default bench/runs), THREADS (default 2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SHARED:-$here/../../shared}
runs=${RUNS:-$here/runs}/caption
emoji=$shared/data/emoji
what=${1:-quality}
threads=${THREADS:-2}
export OMP_NUM_THREADS=$threads
read -r -a corpora <<< "${FEATURES:-vgg cnn}"
mkdir -p "$runs"
source "$here/lib.sh"
splits=(--train "$emoji/splits/train.txt" --valid "$emoji/splits/dev.txt" --test "$emoji/splits/test.txt")
model=(--arch show-attend-tell --emb-size 128 --dec-size 256 --dropout 0.3 --batch-size 32 --optimizer adam
       --lr 0.001 --threads "$threads" --valid-every 500 --patience 0)

case $what in
features)
  tail -n +2 "$emoji/captions.tsv" | cut -f1,2 > "$runs/captions.tsv"
  if [[ " ${corpora[*]} " == *" vgg "* ]]; then
    peak "$runs/vgg.mem" nmtkit preprocess --captions "$runs/captions.tsv" --images "$emoji/images" "${splits[@]}" \
      --tgt en --vocab word:10000 --image-size 112 -o "$runs/vgg" --overwrite 2> "$runs/vgg.log"
    tail -n 4 "$runs/vgg.log"
  fi
  [[ " ${corpora[*]} " == *" cnn "* ]] || exit 0
  python "$here/emoji_cnn.py" "$emoji" "$runs" "${EPOCHS:-12}"
  nmtkit preprocess --captions "$runs/captions.tsv" "${splits[@]}" --tgt en --vocab word:10000 \
    --features "train=$runs/cnn.train.npy" --features "valid=$runs/cnn.dev.npy" --features "test=$runs/cnn.test.npy" \
    -o "$runs/cnn" --overwrite ;;
quality)
  for features in "${corpora[@]}"; do
    for seed in ${SEEDS:-1 2}; do
      for variant in base tatt; do
        run=$runs/$features.$variant.s$seed
        extra=(); [ "$variant" = tatt ] && extra=(--target-attention)
        fresh "$run"
        nmtkit train --data "$runs/$features" --save-dir "$run" "${model[@]}" "${extra[@]}" --seed "$seed" \
          --max-steps "${STEPS:-1500}" 2> "$run.log"
        if [ "$features" = vgg ]; then
          input=(-i "$runs/vgg/test.images"); src=$runs/vgg/test.images
        else
          input=(--features "$runs/cnn.test.npy"); src=$runs/cnn.test.npy
        fi
        nmtkit caption -m "$run/last.pt" --beam 5 "${input[@]}" -o "$run.test.en" 2>> "$run.log"
        refs=$runs/$features/test.en
        b3=$(nmtkit score --metric bleu --max-ngram 3 --no-brevity-penalty --tab-refs -r "$refs" -i "$run.test.en" --score-only)
        b4=$(nmtkit score --metric bleu --max-ngram 4 --no-brevity-penalty --tab-refs -r "$refs" -i "$run.test.en" --score-only)
        cider=$(nmtkit score --metric cider --tab-refs -r "$refs" -i "$run.test.en" --score-only)
        ppl=$(nmtkit score --metric ppl -m "$run/last.pt" --src "$src" --tab-refs -r "$refs" --score-only)
        echo "$features $variant seed $seed: BLEU-3 $b3 BLEU-4 $b4 (no brevity penalty) CIDEr-D $cider test ppl $ppl"
      done
    done
  done ;;
speed)
  head -n 326 "$emoji/splits/test.txt" > "$runs/speed.list"
  start=$(date +%s.%N)
  peak "$runs/speed.features.mem" nmtkit preprocess --captions "$runs/captions.tsv" --images "$emoji/images" \
    --train "$runs/speed.list" --valid "$runs/speed.list" --tgt en --image-size 112 -o "$runs/speed.corpus" \
    --overwrite 2> /dev/null
  end=$(date +%s.%N)
  python -c "import sys; s = float(sys.argv[2]) - float(sys.argv[1]); print(f'features: 2 x 326 images in {s:.1f} s (whole command) = {652 / s:.1f} images/s; peak memory {int(open(sys.argv[3]).read().split()[-1]) / 1e6:.2f} GB')" "$start" "$end" "$runs/speed.features.mem"
  peak "$runs/speed.caption.mem" nmtkit caption -m "$runs/vgg.base.s1/last.pt" --beam 5 -i "$runs/vgg/test.images" \
    -o "$runs/speed.test.en" 2> "$runs/speed.caption.log"
  echo "caption beam 5: $(grep -o 'captioned.*' "$runs/speed.caption.log"); peak memory $(python -c "import sys; print(int(open(sys.argv[1]).read().split()[-1]) / 1e6)" "$runs/speed.caption.mem") GB" ;;
esac
