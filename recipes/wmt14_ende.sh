#!/usr/bin/env bash
# English -> German with target attention: target-target-attention.txt §3 (Table 1's En->De column: RNNsearch
# 16.47 and target attention 17.67 BLEU, perplexities 7.36 and 6.87; the paper gives no En->De score with <unk>
# replaced). The WMT'14 data of Jean et al. (2015), the paper's [8]: Europarl v7, Common Crawl and News Commentary
# v9 (4.5M pairs), newstest2012+2013 to validate, newstest2014 (the full set, 3,003 sentences) to test, normalised
# and tokenised with Moses' scripts (sacremoses: pip install 'nmtkit[recipes]'). 50,000 words a side, gradients
# clipped at 5.0. The stages after the data, the settings and the outputs are recipes/wmt14_target_attn.sh's.
#
# Usage: recipes/wmt14_ende.sh [--dry-run] [--gpus N] [WORKDIR]   (default WORKDIR ./wmt14-ende)
#   --dry-run  prints each step's command and runs none (creates nothing)
#   --gpus N   trains under 'torchrun --nproc-per-node N -m nmtkit train' (one process per GPU)
# Inputs, each a local path or a URL (downloaded once into WORKDIR/downloads, checked, unpacked), from
# http://www.statmt.org/wmt14/translation-task.html:
#   EUROPARL         training/europarl-v7.de-en.{de,en}
#                    [default http://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz]
#   COMMONCRAWL      commoncrawl.de-en.{de,en} [default http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz]
#   NEWS_COMMENTARY  training/news-commentary-v9.de-en.{de,en}
#                    [default http://www.statmt.org/wmt14/training-parallel-nc-v9.tgz]
#   WMT14_DEV        dev/newstest2012.{de,en}, dev/newstest2013.{de,en} [default http://www.statmt.org/wmt14/dev.tgz]
#   WMT14_TEST       test-full/newstest2014-deen-{src.en,ref.de}.sgm [default http://www.statmt.org/wmt14/test-full.tgz]
# Output: WORKDIR/raw/{train,dev,test}.{en,de} (the text as published), WORKDIR/text/ (tokenised), then those of
# recipes/wmt14_target_attn.sh; Table 1's En->De column and Fig. 2's table on standard output.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=wmt14_target_attn.sh
source "$(dirname "$0")/wmt14_target_attn.sh"
options wmt14-ende "$@"
europarl_in=${EUROPARL:-http://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz}
commoncrawl_in=${COMMONCRAWL:-http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz}
nc_in=${NEWS_COMMENTARY:-http://www.statmt.org/wmt14/training-parallel-nc-v9.tgz}
dev_in=${WMT14_DEV:-http://www.statmt.org/wmt14/dev.tgz}
test_in=${WMT14_TEST:-http://www.statmt.org/wmt14/test-full.tgz}
needs_python sacremoses "sacremoses (Moses' tokenizer) is not installed: pip install 'nmtkit[recipes]'"

stage "1. data: Europarl v7, Common Crawl, News Commentary v9; newstest2012+2013, newstest2014; Moses tokenisation"
raw=$work/raw text=$work/text
if [ ! -f "$raw/test.de" ]; then
  input EUROPARL "$europarl_in"
  input COMMONCRAWL "$commoncrawl_in"
  input NEWS_COMMENTARY "$nc_in"
  input WMT14_DEV "$dev_in"
  input WMT14_TEST "$test_in"
  inputs_found
  europarl=$(unpacked "$europarl_in")
  commoncrawl=$(unpacked "$commoncrawl_in")
  nc=$(unpacked "$nc_in")
  dev=$(unpacked "$dev_in")
  newstest=$(unpacked "$test_in")
  [ -d "$raw" ] || step mkdir -p "$raw"
  for lang in en de; do
    into "$raw/train.$lang" cat "$europarl/training/europarl-v7.de-en.$lang" "$commoncrawl/commoncrawl.de-en.$lang" \
      "$nc/training/news-commentary-v9.de-en.$lang"
    into "$raw/dev.$lang" cat "$dev/dev/newstest2012.$lang" "$dev/dev/newstest2013.$lang"
  done
  into "$raw/test.en" segments "$newstest/test-full/newstest2014-deen-src.en.sgm"
  into "$raw/test.de" segments "$newstest/test-full/newstest2014-deen-ref.de.sgm"
fi
[ -d "$text" ] || step mkdir -p "$text"
for split in train dev test; do
  for lang in en de; do into "$text/$split.$lang" moses tokenize "$lang" "$raw/$split.$lang"; done
  same_lines "$text/$split.en" "$text/$split.de"
done

target_attn_experiment de 50000 5.0 "16.47 17.67 - 7.36 6.87"
