#!/usr/bin/env bash
# English -> German with forward, reverse and bidirectional target attention: bidirectional-target-attention.txt §4
# and Table 2's WMT columns (ANMT 22.42 / 25.13 ... BiTAtt-T 28.15 / 30.13 on newstest2014 / 2015). The WMT'15
# training data, 4.5M pairs (Europarl v7, Common Crawl, News Commentary v10), newstest2016 to validate, newstest2014
# and newstest2015 to test, each as SacreBLEU has it (wmt14 is the filtered newstest2014 of 2,737 sentences). The
# text normalised and tokenised with Moses' scripts (sacremoses: pip install 'nmtkit[recipes]'), then segmented by
# BPE of 32,000 units shared by the two languages (SentencePiece's BPE, trained on the training data: §4.1 "byte-pair
# encoding", vocabularies of "32K"); translations detokenised and scored with SacreBLEU on the text as published.
# The systems, their training, the settings and outputs are recipes/bitatt_experiment.sh's (see its header).
#
# Usage: recipes/wmt_ende_bitatt.sh [--dry-run] [--gpus N] [WORKDIR]   (default WORKDIR ./wmt-ende-bitatt)
#   --dry-run  prints each step's command and runs none (creates nothing)
#   --gpus N   trains under 'torchrun --nproc-per-node N -m nmtkit train' (one process per GPU)
# Inputs, each a local path or a URL (downloaded once into WORKDIR/downloads, checked, unpacked), from
# http://www.statmt.org/wmt15/translation-task.html and sacrebleu's list of test sets:
#   EUROPARL         training/europarl-v7.de-en.{de,en}
#                    [default http://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz]
#   COMMONCRAWL      commoncrawl.de-en.{de,en} [default http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz]
#   NEWS_COMMENTARY  news-commentary-v10.de-en.{de,en}
#                    [default http://www.statmt.org/wmt15/training-parallel-nc-v10.tgz]
#   WMT16_TEST       test/newstest2016-ende-{src.en,ref.de}.sgm
#                    [default http://data.statmt.org/wmt16/translation-task/test.tgz]
#   WMT14_TEST       test/newstest2014-deen-{src.en,ref.de}.sgm [default http://www.statmt.org/wmt14/test-filtered.tgz]
#   WMT15_TEST       test/newstest2015-ende-{src.en,ref.de}.sgm [default http://www.statmt.org/wmt15/test.tgz]
# Output: WORKDIR/raw/ (the text as published: train, dev, newstest2014, newstest2015 .en and .de), WORKDIR/text/
# (tokenised: train and dev, the tests' sources), WORKDIR/refs/newstest201{4,5}.ref0 (the references), then those
# of recipes/bitatt_experiment.sh; Table 2's WMT columns on standard output.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=bitatt_experiment.sh
source "$(dirname "$0")/bitatt_experiment.sh"
options wmt-ende-bitatt "$@"
europarl_in=${EUROPARL:-http://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz}
commoncrawl_in=${COMMONCRAWL:-http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz}
nc_in=${NEWS_COMMENTARY:-http://www.statmt.org/wmt15/training-parallel-nc-v10.tgz}
wmt16_in=${WMT16_TEST:-http://data.statmt.org/wmt16/translation-task/test.tgz}
wmt14_in=${WMT14_TEST:-http://www.statmt.org/wmt14/test-filtered.tgz}
wmt15_in=${WMT15_TEST:-http://www.statmt.org/wmt15/test.tgz}
needs_python sacremoses "sacremoses (Moses' tokenizer) is not installed: pip install 'nmtkit[recipes]'"

stage "1. data: Europarl v7, Common Crawl, News Commentary v10; newstest2016; newstest2014, 2015; Moses tokenisation"
raw=$work/raw text=$work/text
if [ ! -f "$raw/newstest2015.de" ]; then
  input EUROPARL "$europarl_in"
  input COMMONCRAWL "$commoncrawl_in"
  input NEWS_COMMENTARY "$nc_in"
  input WMT16_TEST "$wmt16_in"
  input WMT14_TEST "$wmt14_in"
  input WMT15_TEST "$wmt15_in"
  inputs_found
  europarl=$(unpacked "$europarl_in")
  commoncrawl=$(unpacked "$commoncrawl_in")
  nc=$(unpacked "$nc_in")
  wmt16=$(unpacked "$wmt16_in" wmt16-test.tgz)
  wmt14=$(unpacked "$wmt14_in" wmt14-test.tgz)
  wmt15=$(unpacked "$wmt15_in" wmt15-test.tgz)
  [ -d "$raw" ] || step mkdir -p "$raw"
  for lang in en de; do
    into "$raw/train.$lang" cat "$europarl/training/europarl-v7.de-en.$lang" "$commoncrawl/commoncrawl.de-en.$lang" \
      "$nc/news-commentary-v10.de-en.$lang"
  done
  into "$raw/dev.en" segments "$wmt16/test/newstest2016-ende-src.en.sgm"
  into "$raw/dev.de" segments "$wmt16/test/newstest2016-ende-ref.de.sgm"
  into "$raw/newstest2014.en" segments "$wmt14/test/newstest2014-deen-src.en.sgm"
  into "$raw/newstest2014.de" segments "$wmt14/test/newstest2014-deen-ref.de.sgm"
  into "$raw/newstest2015.en" segments "$wmt15/test/newstest2015-ende-src.en.sgm"
  into "$raw/newstest2015.de" segments "$wmt15/test/newstest2015-ende-ref.de.sgm"
fi
for dir in "$text" "$work/refs"; do [ -d "$dir" ] || step mkdir -p "$dir"; done
for split in train dev; do
  for lang in en de; do into "$text/$split.$lang" moses tokenize "$lang" "$raw/$split.$lang"; done
  same_lines "$text/$split.en" "$text/$split.de"
done
for test in newstest2014 newstest2015; do  # the sources tokenised, the references as published
  into "$text/$test.en" moses tokenize en "$raw/$test.en"
  into "$work/refs/$test.ref0" cat "$raw/$test.de"
  same_lines "$text/$test.en" "$work/refs/$test.ref0"
done

bitatt_experiment wmt en de spm-bpe:32000 1 newstest2014 newstest2015
