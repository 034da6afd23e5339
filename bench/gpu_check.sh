#!/usr/bin/env bash
# One check of a GPU (issue 33), at most TIME_LIMIT seconds (default 420) on one H100-class GPU, then the summary:
# everything it measures goes into OUT/summary.txt, the logs into OUT/logs.tar.gz.
#   1. the Transformer base (6+6 layers, d 512, FFN 2048, 8 heads, shared and tied embeddings; the first of
#      BASE_ARCHS, the others in step 4) trains BASE_STEPS updates of BASE_BATCH-token batches with --amp: tok/s
#      per window of 25 updates, epoch 1 apart, peak GPU memory, and the share of the GPU's matrix rate (FLOP per
#      target token of one batch, torch.utils.flop_counter, against the GPU's peak: an 8192-cubed matrix product
#      in the mixed precision); then the test set decoded greedy and with beam 5 (sentences/s), and CPU_LINES of
#      its lines (every k-th, default 200) on the machine's CPU, for the GPU's speed-up; every base run's updates
#      PROFILE (A:B, default the last 10) are profiled (train --profile: wall and kernel time, launches and host
#      synchronisations per update; their window of the speed table runs slower);
#   2. every registered architecture trains STEPS updates and decodes LINES test lines on DEVICE, on a small corpus
#      the script makes (English numbers -> German, a damaged German as a second input, a 7 x 7 grid of random
#      features as an image), so that text, multi-source and captioning models all run;
#   3. with SERVE_MODEL (a trained checkpoint, or `base`: step 1's first base model; none by default): serving under
#      load on DEVICE (bench/serve_load.py, issue 34): SERVE_CLIENTS (default 16) clients sending SERVE_LINES
#      (default 300) lines of SERVE_INPUT (default the test set's English) one a request, the server batching what
#      arrives together, then with --continuous; sentences/s against `translate` at batch 32 of the same lines;
#   4. the other base runs of BASE_ARCHS (default bitatt-transformer of the Transformer base's size), then those of
#      LATER_BASE (default transformer@32768: the Transformer base at 32,768-token batches, its share of the matrix
#      rate at a large batch), after the every-architecture check so that the time limit falls on them.
# Every command runs under what is left of TIME_LIMIT: one still running at the limit is stopped, later ones are not
# run, and the summary says so (a failed step). The seconds each command took are in the summary (a GPU process's
# start-up is a large part of the small steps). It needs no installed `nmtkit` command: without one on the PATH it
# runs `PYTHON -m nmtkit` (PYTHON default python3; put the checkout on PYTHONPATH).
# Usage: bench/gpu_check.sh [OUT]    (default bench/runs/gpu_check; a folder it made before is replaced)
# Environment: DEVICE (default cuda), TIME_LIMIT (420), STEPS (20), LINES (50), BASE_STEPS (200), BASE_BATCH (8192),
#   CPU_LINES (200), CORPUS (a folder of {train,dev,test}.{en,de} for step 1, with SPM its SentencePiece model,
#   e.g. LibreOffice en-de and ../shared/bench/lo-ende-sp8k/spm.model; default the numbers corpus of
#   `nmtkit demo-corpus`, PAIRS pairs, default 100000: about 90 updates an epoch, so that 200 updates reach epoch 3;
#   word vocabulary), PROFILE (the base runs' updates under train --profile, A:B; default the last 10),
#   ARCHS (default every registered architecture; " " for none), JOBS (architectures checked at once in step 2,
#   default 4: a GPU process's start-up is most of each), BASE_ARCHS (default transformer bitatt-transformer) and
#   LATER_BASE (default transformer@32768; " " for none): base runs, each ARCH (decoded), ARCH@TOKENS (batches of
#   TOKENS) or ARCH+compile (train --compile: its tok/s per window against the plain run's); COMPILE=1 adds
#   transformer+compile to LATER_BASE; SERVE_MODEL, SERVE_CLIENTS, SERVE_LINES, SERVE_INPUT (step 3); TINY=1 (small
#   models: the CPU smoke test of tests/bench/test_gpu_check.py).
#   Exit status 1 if any step failed or was not run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
out=${1:-$here/runs/gpu_check}
device=${DEVICE:-cuda} python=${PYTHON:-python3}
steps=${STEPS:-20} lines=${LINES:-50} base_steps=${BASE_STEPS:-200} base_batch=${BASE_BATCH:-8192}
deadline=$(($(date +%s) + ${TIME_LIMIT:-420}))
size=default base=(--d-model 512 --ffn-size 2048 --heads 8 --enc-layers 6 --dec-layers 6)
if [ "${TINY:-0}" = 1 ]; then
  size=tiny base=(--d-model 32 --ffn-size 64 --heads 2 --enc-layers 1 --dec-layers 1)
fi
nmtkit=(nmtkit)
command -v nmtkit > /dev/null || nmtkit=("$python" -m nmtkit)
fresh "$out"
logs=$out/logs
mkdir -p "$logs" "$out/arch" "$out/base"
helper=("$python" "$here/gpu_check.py")
# not_run LOG: true if TIME_LIMIT is (all but) reached, and then LOG and logs/steps.tsv say the step was not run
not_run() {
  [ $((deadline - $(date +%s))) -lt 5 ] || return 1
  echo "not run: TIME_LIMIT reached" > "$1"
  printf '%s\t-\tnot run\n' "${1##*/}" >> "$logs/steps.tsv"
}
# timed LOG COMMAND...: COMMAND (standard error into LOG) under what is left of TIME_LIMIT; its seconds and exit
# status into logs/steps.tsv. Not run, or stopped, at the limit: LOG says so (a failed step of the summary).
timed() {
  local log=$1 start tenths status=0
  not_run "$log" && return 1
  start=$(date +%s%N)
  timeout -k 5 $((deadline - $(date +%s))) "${@:2}" 2> "$log" || status=$?
  [ "$status" != 124 ] && [ "$status" != 137 ] || echo "stopped: TIME_LIMIT reached" >> "$log"
  tenths=$((($(date +%s%N) - start) / 100000000))
  printf '%s\t%d.%d\t%s\n' "${log##*/}" $((tenths / 10)) $((tenths % 10)) "$status" >> "$logs/steps.tsv"
  return "$status"
}
finish() {  # the summary and the logs' tarball, whatever happened; exit 1 if a step failed (FAILED in the summary)
  local status=$?
  "${helper[@]}" summary "$out" > /dev/null 2> "$logs/summary.log" || status=1
  tar -czf "$out/logs.tar.gz" -C "$out" logs
  echo "summary: $out/summary.txt; logs: $out/logs.tar.gz" >&2
  [ "$status" = 0 ] || echo "error: a step failed: see $out/summary.txt" >&2
  exit "$status"
}
trap finish EXIT

echo "== 1. the Transformer base: $base_steps updates of $base_batch tokens, then the test set decoded" >&2
if [ -n "${CORPUS:-}" ]; then
  text=$CORPUS vocab=(--src-vocab "${SPM:?SPM: the SentencePiece model of CORPUS}" --tgt-vocab "$SPM") valid=dev
else
  timed "$logs/text.log" "${nmtkit[@]}" demo-corpus "$out/text" --train "${PAIRS:-100000}" --valid 500 --test 500 \
    || true
  text=$out/text vocab=(--vocab word:1000 --joint) valid=valid
fi
timed "$logs/text.preprocess.log" "${nmtkit[@]}" preprocess --train "$text/train" --valid "$text/$valid" \
  --test "$text/test" --src en --tgt de "${vocab[@]}" --max-len 100 -o "$out/text.data" || true
# base NAME...: each a base run: ARCH, ARCH+compile (train --compile; its model decodes as the plain run's) or
# ARCH@TOKENS (batches of TOKENS; not decoded)
base() {
  local name arch run batch compiled
  for name in "$@"; do
    arch=${name%+compile} run=$out/base/$name batch=$base_batch compiled=()
    [ "$arch" != "$name" ] && compiled=(--compile)
    [[ $arch == *@* ]] && batch=${arch#*@} arch=${arch%@*}
    if timed "$logs/$name.base.train.log" "${nmtkit[@]}" train --data "$out/text.data" --arch "$arch" "${base[@]}" \
         ${compiled[@]+"${compiled[@]}"} --profile "${PROFILE:-$((base_steps > 10 ? base_steps - 9 : 1)):$base_steps}" \
         --share-embeddings --tie-embeddings \
         --label-smoothing 0.1 --batch-type tokens --batch-size "$batch" --optimizer adam --lr 0.0007 \
         --lr-schedule inverse-sqrt --warmup-steps 4000 --adam-beta2 0.98 --amp --device "$device" \
         --max-steps "$base_steps" --log-every $((base_steps < 25 ? base_steps : 25)) --valid-every "$base_steps" \
         --valid-max-sentences 50 --save-every 0 --save-dir "$run"; then
      timed "$logs/$name.rate.log" "${helper[@]}" rate "$run/last.pt" "$out/text.data" "$batch" "$device" \
        > "$out/base/$name.rate.json" || rm -f "$out/base/$name.rate.json"
      cp "$run/profile.txt" "$logs/$name.profile.txt" || true  # (its last 10 updates: train --profile)
      if [ ${#compiled[@]} = 0 ] && [ "$batch" = "$base_batch" ]; then
        awk -v k=$(($(wc -l < "$text/test.en") / ${CPU_LINES:-200})) 'k < 2 || NR % k == 1' "$text/test.en" \
          > "$run.sample.en"
        for mode in greedy beam5; do
          search=(--greedy); [ "$mode" = beam5 ] && search=(--beam 5)
          timed "$logs/$name.$mode.log" "${nmtkit[@]}" translate -m "$run/last.pt" "${search[@]}" \
            --device "$device" --batch-size 64 -i "$text/test.en" -o "$run.test.$mode.de" || true
          timed "$logs/$name.cpu.$mode.log" "${nmtkit[@]}" translate -m "$run/last.pt" "${search[@]}" \
            --device cpu --batch-size 64 -i "$run.sample.en" -o "$run.sample.$mode.de" || true
        done
      fi
    fi
    echo "$name done" >&2
  done
}
read -r -a base_archs <<< "${BASE_ARCHS:-transformer bitatt-transformer}"
# the first base run only: the every-architecture check comes before the others, so that the time limit spares it
base ${base_archs[@]+"${base_archs[0]}"}

echo "== 2. every architecture: $steps updates, $lines lines decoded on $device" >&2
timed "$logs/numbers.log" "${nmtkit[@]}" demo-corpus "$out/numbers" --train 3000 --valid 100 --test "$lines" &&
  "${helper[@]}" multimodal "$out/numbers" "$out/mm" || true
timed "$logs/mm.preprocess.log" "${nmtkit[@]}" preprocess --train "$out/mm/train" --valid "$out/mm/valid" \
  --test "$out/mm/test" --src en --src mt=mt --tgt de --src-images img --features "train=$out/mm/train.npy" \
  --features "valid=$out/mm/valid.npy" --features "test=$out/mm/test.npy" --vocab word:1000 -o "$out/mm/data" || true
archs=${ARCHS:-$("$python" -c "from nmtkit.models.registry import load_plugins, model_names
load_plugins()
print(*model_names())")}
# check ARCH: it trains STEPS updates, then decodes the test lines
check() {
  local arch=$1 sizes command
  not_run "$logs/$arch.train.log" && return  # (no model loaded for its options either)
  mapfile -t sizes < <("${helper[@]}" options "$arch" "$size")
  if timed "$logs/$arch.train.log" "${nmtkit[@]}" train --data "$out/mm/data" --arch "$arch" \
       ${sizes[@]+"${sizes[@]}"} --device "$device" --amp --batch-size 32 --max-steps "$steps" \
       --log-every $((steps < 5 ? steps : 5)) --valid-every "$steps" --valid-max-sentences 10 --save-every 0 \
       --save-dir "$out/arch/$arch"; then
    mapfile -t command < <("${helper[@]}" decode "$out/arch/$arch/last.pt" "$out/mm")
    timed "$logs/$arch.decode.log" "${nmtkit[@]}" "${command[@]}" --device "$device" --beam 5 \
      -o "$out/arch/$arch.test.de" || true
  fi
  echo "$arch done" >&2
}
for arch in $archs; do  # JOBS at a time
  while [ "$(jobs -rp | wc -l)" -ge "${JOBS:-4}" ]; do wait -n || true; done
  check "$arch" &
done
wait

if [ -n "${SERVE_MODEL:-}" ]; then
  echo "== 3. serving $SERVE_MODEL under load on $device" >&2
  served=$SERVE_MODEL
  [ "$served" = base ] && served=$out/base/$(set -- ${BASE_ARCHS:-transformer}; echo "$1")/last.pt
  for mode in batches continuous; do
    flag=(); [ "$mode" = continuous ] && flag=(--continuous)
    timed "$logs/serve.$mode.log" "$python" "$here/serve_load.py" -m "$served" -i "${SERVE_INPUT:-$text/test.en}" \
      --lines "${SERVE_LINES:-300}" --clients "${SERVE_CLIENTS:-16}" --device "$device" --time-limit 60 \
      ${flag[@]+"${flag[@]}"} --json "$out/serve.$mode.json" > "$logs/serve.$mode.txt" || true
  done
fi

later="${base_archs[*]:1} ${LATER_BASE:-transformer@32768}"
[ "${COMPILE:-0}" = 1 ] && later="$later transformer+compile"
if [ -n "${later// /}" ]; then
  echo "== 4. base runs after the check: $later" >&2
  # shellcheck disable=SC2086
  base $later
fi
