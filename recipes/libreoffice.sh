# shellcheck shell=bash
# The part of recipes/libreoffice_ende.sh, _enfr.sh and _enzh.sh that the three pairs share (not a recipe to run):
# each of them sources this file and calls libreoffice_experiment with its target language. English -> TGT on the
# LibreOffice help at CPU scale: rnnsearch, target attention warm-started from it and bitatt-rnn compared on one
# 2-core machine in about an hour (bench/README.md, "Target attention on LibreOffice en-de": rnnsearch's 3,000
# updates and target-attn's 1,500 took 17 minutes; bitatt-rnn's training step costs about 3x rnnsearch's).
#
# libreoffice_experiment TGT (de, fr or zh) runs:
#   1. the corpus: the help pages of the Debian packages libreoffice-help-en-us and libreoffice-help-TGT (7.4.7),
#      paragraphs paired by paragraph id, split by page (python -m nmtkit.data.helppages: 4% of the pages to dev,
#      6% to test, dev/test segments of at most 80 English words); en-de has about 32,000 training pairs, en-fr
#      31,000, en-zh 22,000;
#   2. SentencePiece: one joint model of 8,000 pieces (its character coverage 0.9995, SentencePiece's setting for
#      Chinese), training pairs of at most 80 pieces;
#   3.-5. rnnsearch (3,000 updates), target-attn warm-started from rnnsearch after 1,500 updates and trained 1,500
#      more, bitatt-rnn (3,000 updates), with recipes/configs/libreoffice.yaml (embeddings 128, BiGRU 128, GRU 256,
#      dropout 0.2, batches of 64, Adam 1e-3, clipping at 1);
#   6. the test set translated by each (last.pt, beam 5), the attention kept;
#   7. BLEU and chrF (sacrebleu; BLEU on Chinese with its zh tokenizer) as a table on standard output, then BLEU by
#      source length (nmtkit bucket-bleu, against rnnsearch);
#   8. pictures of the source attention of each model, and of the target attention of target-attn and bitatt-rnn,
#      for the first PICTURES test sentences of 8 to 16 words (nmtkit plot-attn).
# bench/README.md measured, on ../shared/data/lo-ende's split (seed 1): test BLEU / chrF 18.25 / 47.47 (rnnsearch),
# 19.31 / 46.94 (target-attn), 17.40 / 43.66 (bitatt-rnn); the seed alone moves rnnsearch by 2.8 BLEU.
#
# Inputs, the first given of:
#   CORPUS      a folder of {train,dev,test}.{en,TGT} (e.g. ../shared/data/lo-ende, built from the same packages)
#   LO_DEBS     a folder holding libreoffice-help-en-us_*.deb and libreoffice-help-TGT_*.deb (TGT of zh: zh-cn),
#               e.g. fetched by 'apt-get download libreoffice-help-en-us libreoffice-help-de' on Debian 12
#   (default)   both packages downloaded into WORKDIR/downloads from DEBIAN_MIRROR [default
#               https://deb.debian.org/debian]: pool/main/libr/libreoffice/libreoffice-help-LANG_VERSION_all.deb,
#               VERSION being LO_VERSION [default 7.4.7-1+deb12u14]. A mirror keeps only the versions current in
#               its suites: when Debian 12 moves to a newer revision, give it as LO_VERSION ('apt-cache show
#               libreoffice-help-de' shows it, less the epoch '4:'), or a snapshot of the archive of a date when
#               this one was current as DEBIAN_MIRROR (https://snapshot.debian.org/archive/debian/YYYYMMDDTHHMMSSZ).
# Settings: STEPS (3000; target-attn starts from rnnsearch at STEPS/2 and trains STEPS/2 more); SIZES (model sizes
# replacing the config's, e.g. "--emb-size 256 --enc-size 256 --dec-size 512"); BATCH (64); VALID_EVERY (1000);
# VOCAB (spm:8000); MAX_LEN (80); DEV_PAGES (0.04) and TEST_PAGES (0.06), the shares of the pages held out;
# BEAM (5); PICTURES (3); DEVICE (auto); DOWNLOADER (see lib.sh).
# Outputs: WORKDIR/text/ (the corpus, unless CORPUS), WORKDIR/data/ (SentencePiece and shards),
# WORKDIR/models/{rnnsearch-half,rnnsearch,target-attn,bitatt-rnn}/, WORKDIR/out/ (MODEL.test.TGT and the
# attention MODEL.att.h5), WORKDIR/scores/ (each number; buckets.txt, .csv and .png), WORKDIR/pictures/
# (MODEL.INDEX.source.png, MODEL.INDEX.target.png; INDEX the test line number - 1).
# A step whose outputs exist is skipped, so a run that failed or was stopped resumes where it was (a stopped
# training goes on with --resume); a failed step stops the recipe with one line naming the step.

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  echo "error: $0 is the part that recipes/libreoffice_ende.sh, _enfr.sh and _enzh.sh share: run one of them" >&2
  exit 2
fi
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
config=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/configs/libreoffice.yaml

libreoffice_corpus() {  # libreoffice_corpus TGT PACKAGE: sets text, the folder of {train,dev,test}.{en,TGT}
  local tgt=$1 lang deb
  local -a debs=()
  if [ -n "${CORPUS:-}" ]; then
    text=$CORPUS
    input CORPUS "$text"/{train,dev,test}.{en,"$tgt"}
    inputs_found
    return
  fi
  text=$work/text
  [ -d "$text" ] && return
  for lang in en-us "$2"; do
    if [ -n "${LO_DEBS:-}" ]; then
      deb=$(find "$LO_DEBS" -maxdepth 1 -name "libreoffice-help-${lang}_*.deb" 2> /dev/null | sort -V | tail -n 1 \
        || true)  # (the newest; the folder's path taken as it is, [ and * too)
      needed "$deb" "LO_DEBS: $LO_DEBS holds no libreoffice-help-${lang}_*.deb"
    else
      deb=${DEBIAN_MIRROR:-https://deb.debian.org/debian}/pool/main/libr/libreoffice
      deb=$(fetch "$deb/libreoffice-help-${lang}_${LO_VERSION:-7.4.7-1+deb12u14}_all.deb")
    fi
    debs+=("$deb")
  done
  inputs_found
  step python -m nmtkit.data.helppages "${debs[@]}" --dev "${DEV_PAGES:-0.04}" --test "${TEST_PAGES:-0.06}" \
    -o "$text"
}

libreoffice_experiment() {  # libreoffice_experiment TGT: the stages of the header, for English -> TGT
  local tgt=$1 package=$1 tokenize=13a name i
  [ "$tgt" = zh ] && package=zh-cn tokenize=zh
  whole_numbers STEPS BATCH VALID_EVERY MAX_LEN PICTURES
  local steps=${STEPS:-3000} models=$work/models out=$work/out scores=$work/scores pictures=$work/pictures
  local half=$(( ${STEPS:-3000} / 2 ))
  [ "$half" -gt 0 ] ||
    { echo "error: STEPS: expects at least 2 (target-attn starts at STEPS/2), got '$steps'" >&2; exit 2; }
  local -a overrides picks
  read -r -a overrides <<< "${SIZES:-} ${BATCH:+--batch-size $BATCH} ${VALID_EVERY:+--valid-every $VALID_EVERY}"
  local names=(rnnsearch target-attn bitatt-rnn)

  stage "1. corpus: the LibreOffice help in English and $package, paragraphs paired by id, split by page"
  libreoffice_corpus "$tgt" "$package"
  same_lines "$text/train.en" "$text/train.$tgt"
  same_lines "$text/dev.en" "$text/dev.$tgt"
  same_lines "$text/test.en" "$text/test.$tgt"

  stage "2. preprocess: SentencePiece ${VOCAB:-spm:8000}, training pairs of at most ${MAX_LEN:-80} pieces"
  [ -f "$work/data/manifest.json" ] || step nmtkit preprocess --train "$text/train" --valid "$text/dev" \
    --test "$text/test" --src en --tgt "$tgt" --vocab "${VOCAB:-spm:8000}" --max-len "${MAX_LEN:-80}" -o "$work/data"

  local common=(--config "$config" --data "$work/data" --device "$device")
  stage "3. rnnsearch, its first $half updates (target-attn's warm start)"
  train "$models/rnnsearch-half" "${common[@]}" --arch rnnsearch --max-steps "$half" "${overrides[@]}"
  stage "4. rnnsearch: on from there to $steps updates"
  if [ ! -d "$models/rnnsearch" ]; then  # a copy of the first half, resumed (an exact resume)
    step rm -rf "$models/rnnsearch.part"
    step cp -r "$models/rnnsearch-half" "$models/rnnsearch.part"
    step rm "$models/rnnsearch.part/done"
    step mv "$models/rnnsearch.part" "$models/rnnsearch"
  fi
  train "$models/rnnsearch" "${common[@]}" --arch rnnsearch --max-steps "$steps" "${overrides[@]}"
  stage "5. target-attn warm-started from rnnsearch after $half updates, $half more; bitatt-rnn, $steps updates"
  train "$models/target-attn" "${common[@]}" --arch target-attn --max-steps "$half" "${overrides[@]}" \
    --init-from "$models/rnnsearch-half/last.pt" --init-optimizer --init-lr
  train "$models/bitatt-rnn" "${common[@]}" --arch bitatt-rnn --max-steps "$steps" "${overrides[@]}"

  stage "6. translate the test set (beam ${BEAM:-5}), the attention kept"
  for i in "$out" "$scores" "$pictures"; do [ -d "$i" ] || step mkdir -p "$i"; done
  for name in "${names[@]}"; do
    if [ ! -e "$out/$name.test.$tgt" ] || [ ! -e "$out/$name.att.h5" ]; then
      step nmtkit translate -m "$models/$name/last.pt" --beam "${BEAM:-5}" --device "$device" -i "$text/test.en" \
        --attention-out "$out/$name.att.h5" -o "$out/$name.test.$tgt"
    fi
  done

  stage "7. score: BLEU and chrF, BLEU by source length"
  for name in "${names[@]}"; do
    into "$scores/$name.bleu" nmtkit score --metric bleu --tokenize "$tokenize" -r "$text/test.$tgt" \
      -i "$out/$name.test.$tgt" --score-only
    into "$scores/$name.chrf" nmtkit score --metric chrf -r "$text/test.$tgt" -i "$out/$name.test.$tgt" --score-only
  done
  into "$scores/buckets.txt" env COLUMNS=150 nmtkit bucket-bleu --src "$text/test.en" --ref "$text/test.$tgt" \
    --bleu-tokenize "$tokenize" --hyp "rnnsearch=$out/rnnsearch.test.$tgt" \
    --hyp "target-attn=$out/target-attn.test.$tgt" --hyp "bitatt-rnn=$out/bitatt-rnn.test.$tgt" \
    --csv "$scores/buckets.csv" --plot "$scores/buckets.png" --title "BLEU by source length, LibreOffice en-$tgt"

  stage "8. attention pictures"
  if [ -f "$text/test.en" ]; then
    mapfile -t picks < <(awk 'NF >= 8 && NF <= 16 { print NR - 1 }' "$text/test.en" | head -n "${PICTURES:-3}")
  else
    picks=(INDEX)  # --dry-run before the corpus exists: the first PICTURES test lines of 8 to 16 words
  fi
  for i in "${picks[@]}"; do
    for name in "${names[@]}"; do
      [ -e "$pictures/$name.$i.source.png" ] || step nmtkit plot-attn "$out/$name.att.h5" --index "$i" \
        -o "$pictures/$name.$i.source.png"
      [ "$name" = rnnsearch ] || [ -e "$pictures/$name.$i.target.png" ] || step nmtkit plot-attn \
        "$out/$name.att.h5" --index "$i" --kind target -o "$pictures/$name.$i.target.png"
    done
  done
  [ "$dry" = 1 ] && return

  echo "== LibreOffice en-$tgt: test BLEU and chrF ($(wc -l < "$text/test.en") sentences, beam ${BEAM:-5})"
  printf '%-12s %-22s %6s %6s\n' model updates BLEU chrF
  printf '%-12s %-22s %6s %6s\n' rnnsearch "$steps" "$(cat "$scores/rnnsearch.bleu")" \
    "$(cat "$scores/rnnsearch.chrf")" target-attn "$half + $half (warm start)" "$(cat "$scores/target-attn.bleu")" \
    "$(cat "$scores/target-attn.chrf")" bitatt-rnn "$steps" "$(cat "$scores/bitatt-rnn.bleu")" \
    "$(cat "$scores/bitatt-rnn.chrf")"
  echo "== BLEU by source length (also $scores/buckets.png)"
  cat "$scores/buckets.txt"
  echo "== attention pictures: ${#picks[@]} test sentences in $pictures"
}
