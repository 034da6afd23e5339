# shellcheck shell=bash
# The machinery the recipes share; each recipe sources it (source "$(dirname "$0")/lib.sh") after 'set -euo pipefail'
# and keeps only its own experiment.
#
# Conventions every recipe follows:
#   recipes/NAME.sh [--dry-run] [--gpus N] [WORKDIR]; -h prints that line. --dry-run prints each step's command
#   instead of running it and creates nothing; --gpus N trains under 'torchrun --nproc-per-node N -m nmtkit train'.
#   Everything is made under WORKDIR; downloads go to WORKDIR/downloads (through a .part file, checked).
#   A step whose outputs exist is skipped, so a run that failed or was stopped resumes where it was: files are
#   written through FILE.part and folders through DIR.part, then renamed; a training whose 'done' marker is missing
#   goes on with --resume from its last.pt. A failed step stops the recipe with one line,
#   "error: step STAGE failed: ...", naming the stage (exit code 1); wrong options or settings exit with code 2.
#   The stage headers ("== STAGE") and the progress go to standard error; the results (tables) to standard output.
#   Settings every recipe reads: DEVICE (default auto); DOWNLOADER (default "curl -fL --retry 3 -o", run as
#   DOWNLOADER DEST URL).
#
# Functions (and the variables they set):
#   options DEFAULT_WORKDIR "$@"  the command line: sets dry (0/1), gpus, launcher (the command before 'train':
#                                 nmtkit, or torchrun ... -m nmtkit), work (WORKDIR) and downloads
#   needed VALUE MESSAGE          stop with "error: MESSAGE" (exit code 2) if VALUE is empty (a required input)
#   stage NAME                    start a stage: prints "== NAME" and names the stage in error lines
#   step COMMAND...               run COMMAND, or print it with --dry-run; a failure stops the recipe with one line
#   fail MESSAGE                  stop the recipe with "error: step STAGE failed: MESSAGE"
#   into FILE COMMAND...          COMMAND's standard output into FILE (atomically), skipped if FILE exists
#   fetch SRC                     prints the local path of SRC: a local path as it is (it must exist), a URL
#                                 downloaded once into WORKDIR/downloads with DOWNLOADER and checked (see check)
#   check FILE URL                a download is not empty and, by the URL's name, a readable .zip, .tar.gz/.tgz or
#                                 .gz, and a .pth named NAME-HASH.pth (as torchvision and torch.hub name weights)
#                                 has a SHA-256 starting with HASH; else it is removed and the recipe stops
#   unpack ARCHIVE DIR            a .zip, .tar.gz or .tgz unpacked into DIR (through DIR.part), unless DIR exists
#   flickr30k_images SRC          sets images to the folder of the Flickr30k .jpg files from SRC, a folder or
#                                 flickr30k-images.tar.gz (a local path or a URL: fetched, unpacked into WORKDIR/images)
#   same_lines FILE...            stop unless the files have as many lines as the first
#   train MODEL_DIR OPTION...     nmtkit train OPTION... --save-dir MODEL_DIR through launcher; skipped once
#                                 MODEL_DIR/done exists, written when it finishes; with MODEL_DIR/last.pt (a stopped
#                                 run) it goes on with --resume, and then '--init-from FILE' (a warm start: the first
#                                 run's only) is left out

# shellcheck disable=SC2034  # device, launcher, images and work are the recipes'
device=${DEVICE:-auto}
downloader=${DOWNLOADER:-curl -fL --retry 3 -o}
stage=""
dry=0

options() {  # options DEFAULT_WORKDIR "$@": --dry-run, --gpus N, -h, then WORKDIR
  local default=$1 usage
  shift
  usage="usage: recipes/$(basename "$0") [--dry-run] [--gpus N] [WORKDIR]"
  dry=0 gpus=0
  while [ $# -gt 0 ]; do
    case $1 in
    --dry-run) dry=1; shift ;;
    --gpus) gpus=${2:-}; shift $(( $# > 1 ? 2 : 1 )) ;;
    --gpus=*) gpus=${1#--gpus=}; shift ;;
    -h|--help) echo "$usage (see the header of $0)"; exit 0 ;;
    -*) echo "error: unknown option $1 ($usage)" >&2; exit 2 ;;
    *) break ;;
    esac
  done
  [[ $gpus =~ ^[0-9]+$ ]] || { echo "error: --gpus: expects a number of GPUs, got '$gpus'" >&2; exit 2; }
  launcher=(nmtkit)
  [ "$gpus" -gt 0 ] && launcher=(torchrun --nproc-per-node "$gpus" -m nmtkit)
  work=${1:-$default}
  downloads=$work/downloads
}

needed() {  # needed VALUE MESSAGE: a required input
  [ -n "$1" ] || { echo "error: $2" >&2; exit 2; }
}

stage() { stage=$1; echo "== $1" >&2; }

fail() { echo "error: step $stage failed: $*" >&2; exit 1; }

step() {  # run a command, or print it with --dry-run; stop with a line naming the step if it fails
  if [ "$dry" = 1 ]; then printf '%q ' "$@"; echo; return; fi
  "$@" || fail "$*"
}

into() {  # into FILE COMMAND...: COMMAND's standard output into FILE (atomically), unless FILE exists
  local out=$1; shift
  [ -e "$out" ] && return
  if [ "$dry" = 1 ]; then printf '%q ' "$@"; echo "> $out"; return; fi
  "$@" > "$out.part" || { rm -f "$out.part"; fail "$* > $out"; }
  mv "$out.part" "$out"
}

check() {  # check FILE URL: a download is not empty, unpacks, matches its checksum; else removed, and we stop
  local why="" name hash
  name=$(basename "$2")
  if [ ! -s "$1" ]; then why="the download is empty"
  else
    case $name in
    *.zip) python -m zipfile -t "$1" > /dev/null 2>&1 || why="not a readable zip archive" ;;
    *.tar.gz|*.tgz) tar -tzf "$1" > /dev/null 2>&1 || why="not a readable .tar.gz archive" ;;
    *.gz) gzip -t "$1" > /dev/null 2>&1 || why="not a readable gzip file (gzip -t)" ;;
    *.pth)
      if [[ $name =~ -([0-9a-f]{8,})\.pth$ ]]; then  # torchvision names its weights by their SHA-256's start
        hash=$(sha256sum "$1" | cut -c1-${#BASH_REMATCH[1]})
        [ "$hash" = "${BASH_REMATCH[1]}" ] || why="SHA-256 starts $hash, not ${BASH_REMATCH[1]} as its name says"
      fi ;;
    esac
  fi
  [ -z "$why" ] && return
  rm -f "$1"
  fail "$2: $why (removed; run again to fetch it again)"
}

fetch() {  # fetch SRC: a local path as it is, a URL downloaded once into $downloads; prints the local path
  case $1 in
  http://*|https://*)
    local dest
    dest=$downloads/$(basename "$1")
    if [ ! -e "$dest" ]; then
      [ -d "$downloads" ] || step mkdir -p "$downloads" >&2
      # shellcheck disable=SC2086  # DOWNLOADER is a command with its options
      step $downloader "$dest.part" "$1" >&2
      [ "$dry" = 1 ] || check "$dest.part" "$1"
      step mv "$dest.part" "$dest" >&2
    fi
    echo "$dest" ;;
  *)
    [ "$dry" = 1 ] || [ -e "$1" ] || fail "$1: no such file or folder"
    echo "$1" ;;
  esac
}

unpack() {  # unpack ARCHIVE DIR: a .zip, .tar.gz or .tgz into DIR (through DIR.part), unless DIR exists
  [ -d "$2" ] && return
  step mkdir -p "$2.part"
  if [[ $1 == *.zip ]]; then step python -m zipfile -e "$1" "$2.part"
  else step tar -xzf "$1" -C "$2.part"; fi
  step mv "$2.part" "$2"
}

flickr30k_images() {  # flickr30k_images SRC: sets images to the folder of the images, SRC fetched and unpacked
  images=$(fetch "$1")
  if [[ $images == *.tar.gz || $images == *.tgz ]]; then
    unpack "$images" "$work/images"
    images=$work/images/flickr30k-images
    [ "$dry" = 1 ] || [ -d "$images" ] || images=$work/images
  fi
}

same_lines() {  # same_lines FILE...: every file has as many lines as the first
  [ "$dry" = 1 ] && return
  local n file
  n=$(wc -l < "$1")
  for file in "${@:2}"; do
    [ "$(wc -l < "$file")" = "$n" ] || fail "$1 has $n lines but $file $(wc -l < "$file")"
  done
}

train() {  # train MODEL_DIR OPTION...: a training that resumes, and says when it is done
  local model=$1 args=() resume=()
  shift
  [ -e "$model/done" ] && return
  if [ -f "$model/last.pt" ]; then  # a run that was stopped goes on where it was
    resume=(--resume)
    while [ $# -gt 0 ]; do
      if [ "$1" = --init-from ]; then shift $(( $# > 1 ? 2 : 1 )); else args+=("$1"); shift; fi
    done
  else
    args=("$@")
  fi
  step "${launcher[@]}" train "${args[@]}" --save-dir "$model" "${resume[@]}"
  step touch "$model/done"
}
