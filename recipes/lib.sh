# shellcheck shell=bash
# The machinery the recipes share; each recipe sources it (source "$(dirname "$0")/lib.sh") after 'set -euo pipefail'
# and keeps only its own experiment.
#
# Conventions every recipe follows:
#   recipes/NAME.sh [--dry-run] [--gpus N] [WORKDIR]; -h prints that line. --dry-run prints each step's command
#   (downloads included) on standard output instead of running it, and creates nothing; --gpus N trains under
#   'torchrun --nproc-per-node N -m nmtkit train'.
#   Everything is made under WORKDIR; downloads go to WORKDIR/downloads (through a .part file, checked).
#   A step whose outputs exist is skipped, so a run that failed or was stopped resumes where it was: files are
#   written through FILE.part and folders through DIR.part, then renamed; a training whose 'done' marker is missing
#   goes on with --resume from its last.pt. A failed step stops the recipe with one line,
#   "error: step STAGE failed: ...", naming the stage (exit code 1); wrong options or settings exit with code 2.
#   The stage headers ("== STAGE") and the progress go to standard error; the results (tables) to standard output.
#   Settings every recipe reads: DEVICE (default auto); DOWNLOADER (default "curl -fL --retry 3 -o", run as
#   DOWNLOADER DEST URL).
#   Inputs (the header's "Inputs" list: settings naming local paths or URLs) are checked before the first step, with
#   --dry-run too: each one missing is a line "error: SETTING: ...", all of them, and the recipe stops (exit code 2).
#   A folder that a script clears and makes anew (fresh) holds the marker .nmtkit-workdir: one without it is never
#   cleared (the user's), nor one that a process trains in. A paper recipe's WORKDIR holds the stamp .nmtkit-recipe
#   naming the recipe: another recipe's WORKDIR, or a folder neither empty nor stamped, is refused (own_workdir).
#
# Functions (and the variables they set):
#   options DEFAULT_WORKDIR "$@"  the command line: sets dry (0/1), gpus, launcher (the command before 'train':
#                                 nmtkit, or torchrun ... -m nmtkit), work (WORKDIR) and downloads; then (unless
#                                 afresh=1, the demo's: it makes WORKDIR anew with fresh) own_workdir
#   own_workdir                   WORKDIR is this recipe's: new or empty, it gets the stamp .nmtkit-recipe holding
#                                 the recipe's name before its first step writes (not with --dry-run: claim); else it
#                                 must hold that stamp. A folder of another recipe's, or one without the stamp and
#                                 not empty, is refused in one line "error: WORKDIR: ..." (exit code 2): since a step
#                                 whose outputs exist is skipped, the recipe would take the files it finds there for
#                                 its own
#   needed VALUE MESSAGE          a required input: "error: MESSAGE" if VALUE is empty (at inputs_found)
#   input SETTING PATH...         the local inputs PATH..., given by SETTING, exist (URLs are fetched later); else
#                                 "error: SETTING: PATH: no such file or folder", PATH the first missing folder on its
#                                 way (at inputs_found)
#   inputs_found                  stop (exit code 2) with a line for each missing input of needed and input, if any
#   fresh DIR                     DIR made anew, empty but for the marker .nmtkit-workdir: an existing DIR is cleared
#                                 only if it holds the marker or is empty, and no process trains in it (a run's
#                                 .lock held); else one line "error: DIR: ..." (exit code 2), nothing deleted
#   stage NAME                    start a stage: prints "== NAME" and names the stage in error lines
#   step COMMAND...               run COMMAND, or print it with --dry-run; a failure stops the recipe with one line
#   fail MESSAGE                  stop the recipe with "error: step STAGE failed: MESSAGE"
#   into FILE COMMAND...          COMMAND's standard output into FILE (atomically), skipped if FILE exists
#   fetch SRC [NAME]              prints the local path of SRC: a local path as it is (it must exist), a URL
#                                 downloaded once into WORKDIR/downloads with DOWNLOADER and checked (see check),
#                                 as NAME if given (for URLs whose file names are the same), else the URL's name; the
#                                 tools that check and unpack it (python, tar, gzip; for a .deb, nmtkit importable by
#                                 python) found first (checking_tools)
#   check FILE URL                a download is not empty and, by the URL's name, a readable .zip, .tar.gz/.tgz or
#                                 .gz, a whole Debian package (.deb), and a .pth named NAME-HASH.pth (as torchvision and
#                                 torch.hub name weights) has a SHA-256 starting with HASH; else it is removed and
#                                 the recipe stops
#   unpack ARCHIVE DIR            a .zip, .tar.gz or .tgz unpacked into DIR (through DIR.part), unless DIR exists;
#                                 DIR.source names the archive, and a DIR of another archive stops the recipe
#   unpacked SRC [NAME]           prints the folder where the archive SRC (fetch SRC [NAME]) is unpacked once,
#                                 unpacked_dir NAME (by default the archive's file name): WORKDIR/unpacked/NAME less
#                                 .zip, .tgz or .tar.gz; or SRC itself, a local folder holding what the archive
#                                 would; assign it (dir=$(unpacked ...)) so that a failure stops the recipe
#   py CODE ARG...                python -c CODE ARG..., a failure one line ("error: ..."; "interrupted" on Ctrl-C,
#                                 exit code 130), not a traceback
#   unzip_into ZIP DIR            the files of ZIP into DIR (Python's zipfile)
#   segments SGM                  the text of the <seg> lines of an SGML file (WMT test sets before 2021, NIST sets),
#                                 one a line, spaces trimmed and collapsed, as sacrebleu reads them
#   moses tokenize|detokenize LANG FILE
#                                 FILE's lines through Moses' punctuation normaliser and tokenizer (no escaping of
#                                 & < > ' " |), or its detokenizer: sacremoses, the Python port of Moses' scripts
#   translate_unk_score NAME MODEL SRC REF DICT OUT SCORES
#                                 the paper recipes' evaluation: SRC translated by MODEL (beam BEAM, default 12)
#                                 into OUT/NAME.test.EXT with its attention (OUT/NAME.att.h5), <unk> replaced from the
#                                 lexical table DICT (OUT/NAME.test.unk.EXT), tokenised BLEU of both against REF and
#                                 REF's perplexity into SCORES/NAME.{test,test.unk}.bleu and SCORES/NAME.ppl (EXT: REF's)
#   needs_python MODULE MESSAGE   stop with "error: MESSAGE" (exit code 2) unless Python can import MODULE (not
#                                 checked with --dry-run)
#   flickr30k_images SRC          sets images to the folder of the Flickr30k .jpg files from SRC, a folder or
#                                 flickr30k-images.tar.gz (a local path or a URL: fetched, unpacked into WORKDIR/images)
#   same_lines FILE...            stop unless the files have as many lines as the first; those under WORKDIR (made
#                                 from the inputs) are then removed, to be made again once the inputs are mended
#   train MODEL_DIR OPTION...     nmtkit train OPTION... --save-dir MODEL_DIR through launcher; skipped once
#                                 MODEL_DIR/done exists, written when it finishes; with MODEL_DIR/last.pt (a stopped
#                                 run) it goes on with --resume, and then '--init-from FILE', '--init-lr' and
#                                 '--init-optimizer' (a warm start: the first run's only) are left out

# shellcheck disable=SC2034  # device, launcher, images and work are the recipes'
device=${DEVICE:-auto}
downloader=${DOWNLOADER:-curl -fL --retry 3 -o}
stage=""
dry=0
exec 3>&1  # the recipe's standard output, where --dry-run prints each step (also from within $(fetch ...))

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
  whole_numbers BEAM  # (the evaluation's, which lib.sh's translate_unk_score reads too)
  [[ $device =~ ^(auto|cpu|mps|cuda(:[0-9]+)?)$ ]] || {
    echo "error: DEVICE: expects auto, cpu, mps, cuda or cuda:N (nmtkit's --device), got '$device'" >&2; exit 2; }
  [ $# -le 1 ] || { echo "error: one WORKDIR, and options before it; got also: ${*:2} ($usage)" >&2; exit 2; }
  launcher=(nmtkit)
  [ "$gpus" -gt 0 ] && launcher=(torchrun --nproc-per-node "$gpus" -m nmtkit)
  work=${1:-$default}
  downloads=$work/downloads
  [ "${afresh:-0}" = 1 ] || own_workdir
}

whole_numbers() {  # whole_numbers NAME...: each setting NAME, where given, a whole number above 0; else one line, exit 2
  local name
  for name; do
    [[ ${!name:-1} =~ ^[1-9][0-9]*$ ]] || { echo "error: $name: expects a whole number above 0, got '${!name}'" >&2; exit 2; }
  done
}

own_workdir() {  # WORKDIR holds this recipe's outputs and no one else's: its stamp names the recipe (see the header)
  local name owner=""
  name=$(basename "$0")
  [ -f "$work/$recipe_stamp" ] && owner=$(head -n 1 "$work/$recipe_stamp" 2> /dev/null || true)
  if [ -n "$owner" ]; then  # (an empty or unreadable stamp is none)
    [ "$owner" = "$name" ] && return
    echo "error: $work: holds the outputs of recipes/$owner, which recipes/$name would take for its own (a step" \
      "whose outputs exist is skipped); choose another folder" >&2
    exit 2
  fi
  if [ -e "$work" ] || [ -L "$work" ]; then
    [ -d "$work" ] || { echo "error: $work: exists and is not a folder; choose another WORKDIR" >&2; exit 2; }
    if [ -n "$(ls -A "$work")" ]; then
      echo "error: $work: exists and was not made by recipes/$name (no $recipe_stamp stamp): a step whose outputs" \
        "exist is skipped, so its files would be taken for this recipe's; choose another folder (an earlier run of" \
        "this recipe by an nmtkit before the stamp: echo $name > $(printf %q "$work/$recipe_stamp"))" >&2
      exit 2
    fi
  fi
  unclaimed=$name
}

claim() {  # the stamp that own_workdir found missing, written before a step (step, into) runs for real
  [ -z "$unclaimed" ] && return
  mkdir -p "$work" && echo "$unclaimed" > "$work/$recipe_stamp"
  unclaimed=""
}

missing=()  # the lines of the missing inputs (needed, input), for inputs_found
workdir_marker=.nmtkit-workdir  # in a folder that fresh made: it may clear it again
recipe_stamp=.nmtkit-recipe  # in a paper recipe's WORKDIR: the name of the recipe whose outputs it holds
unclaimed=""  # the recipe's name while its WORKDIR's stamp is still to be written (claim)

needed() {  # needed VALUE MESSAGE: a required input; missing if VALUE is empty
  [ -n "$1" ] || missing+=("$2")
}

input() {  # input SETTING PATH...: local inputs given by SETTING, each missing one noted once (a URL is fetched later)
  local path line seen
  for path in "${@:2}"; do
    [[ -z $path || $path == http://* || $path == https://* || -e $path ]] && continue
    while [ ! -e "$(dirname "$path")" ]; do path=$(dirname "$path"); done  # the first missing folder on the way
    line="$1: $path: no such file or folder"
    for seen in "${missing[@]}"; do [ "$seen" = "$line" ] && continue 2; done
    missing+=("$line")
  done
}

inputs_found() {  # stop with a line for each missing input (exit code 2), if any; with --dry-run too
  [ ${#missing[@]} -eq 0 ] || { printf 'error: %s\n' "${missing[@]}" >&2; exit 2; }
}

held_lock() {  # held_lock DIR: prints the first .lock under DIR that a process holds (nmtkit train's run lock)
  local lock
  command -v flock > /dev/null || return 0  # (no flock(1), as on macOS: not checked)
  while IFS= read -r lock; do
    flock -n "$lock" true || { echo "$lock"; return; }
  done < <(find "$1" -name .lock -type f 2> /dev/null)
}

fresh() {  # fresh DIR [NAME...]: DIR made anew for this script, an existing DIR only if the marker says it is ours;
  # of such a DIR, only the NAMEs this script makes are removed (no NAME: all it holds), never the marker
  local dir=${1%/} why="" lock entry
  shift
  if [ -e "$dir" ] || [ -L "$dir" ]; then
    if [ ! -d "$dir" ]; then why="exists and is not a folder; remove it yourself"
    elif [ ! -e "$dir/$workdir_marker" ] && [ -n "$(ls -A "$dir")" ]; then
      why="exists and was not made by this script (no $workdir_marker marker); remove it yourself"
    else
      lock=$(held_lock "$dir")
      [ -z "$lock" ] || why="a process is training in it ($lock is locked); wait for it to end"
    fi
    [ -z "$why" ] || { echo "error: $dir: $why or choose another folder" >&2; exit 2; }
  fi
  step mkdir -p "$dir"
  [ $# -gt 0 ] || set -- "$dir"/* "$dir"/.[!.]* "$dir"/..?*  # (no NAME: all it holds, the folder a link names)
  for entry; do
    entry=$dir/${entry##*/}
    [ "${entry##*/}" != "$workdir_marker" ] || continue  # (kept: a stop halfway leaves the folder ours)
    if [ -e "$entry" ] || [ -L "$entry" ]; then step find "$entry" -delete; fi
  done
  step touch "$dir/$workdir_marker"
}

stage() { stage=$1; echo "== $1" >&2; }

fail() { echo "error: step${stage:+ $stage} failed: $*" >&2; exit 1; }

step() {  # run a command, or print it with --dry-run; stop with a line naming the step if it fails
  if [ "$dry" = 1 ]; then { printf '%q ' "$@"; echo; } >&3; return; fi
  claim
  "$@" || fail "$*"
}

into() {  # into FILE COMMAND...: COMMAND's standard output into FILE (atomically), unless FILE exists
  local out=$1; shift
  [ -e "$out" ] && return
  if [ "$dry" = 1 ]; then { printf '%q ' "$@"; printf '> %q\n' "$out"; } >&3; return; fi
  claim
  "$@" > "$out.part" || { rm -f "$out.part"; fail "$* > $out"; }
  mv "$out.part" "$out"
}

url_name() {  # url_name URL: the file name a URL ends with, without its query or fragment (?sequence=3&isAllowed=y)
  local path=${1%%[?#]*}
  basename "$path"
}

checking_tools() {  # checking_tools NAME: stop, before a download, if a tool that checks or unpacks NAME is missing
  local tool tools=()
  case $1 in
  *.zip|*.deb) tools=(python) ;;
  *.tar.gz|*.tgz) tools=(tar gzip) ;;
  *.gz) tools=(gzip) ;;
  esac
  for tool in "${tools[@]}"; do
    command -v "$tool" > /dev/null || fail "$tool: command not found (it checks and unpacks $1); install it"
  done
  [[ $1 != *.deb ]] || python -c "import nmtkit.data.helppages" 2> /dev/null \
    || fail "python: cannot import nmtkit (it checks $1); install nmtkit for $(command -v python)"
}

check() {  # check FILE URL: a download is not empty, unpacks, matches its checksum; else removed, and we stop
  local why="" name hash
  name=$(url_name "$2")
  if [ ! -s "$1" ]; then why="the download is empty"
  else
    case $name in
    *.zip)  # (each member's CRC checked: `python -m zipfile -t` exits 0 on a damaged one)
      python -c 'import sys, zipfile; sys.exit(zipfile.ZipFile(sys.argv[1]).testzip() is not None)' "$1" \
        > /dev/null 2>&1 || why="not a readable zip archive" ;;
    *.tar.gz|*.tgz) tar -tzf "$1" > /dev/null 2>&1 || why="not a readable .tar.gz archive" ;;
    *.gz) gzip -t "$1" > /dev/null 2>&1 || why="not a readable gzip file (gzip -t)" ;;
    *.deb)  # (an ar archive whose members, debian-binary first, fill the file: one cut short fails)
      python -c 'import sys; from nmtkit.data.helppages import check_package; check_package(sys.argv[1])' "$1" \
        > /dev/null 2>&1 \
        || why="not a whole Debian package (.deb)" ;;
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

fetch() {  # fetch SRC [NAME]: a local path as it is, a URL downloaded once into $downloads (as NAME); prints the path
  case $1 in
  http://*|https://*)
    local dest
    dest=$downloads/${2:-$(url_name "$1")}
    if [ ! -e "$dest" ]; then
      [ "$dry" = 1 ] || checking_tools "$(basename "$dest")"
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

unpack() {  # unpack ARCHIVE DIR: a .zip, .tar.gz or .tgz into DIR (through DIR.part), unless DIR holds it already;
  # DIR.source names the archive unpacked (its full path), so that another one for DIR is refused, not taken for it
  local source=$1 was
  [[ $source == /* ]] || source=$PWD/$source
  if [ -d "$2" ]; then
    was=$(cat "$2.source" 2> /dev/null || echo "$source")  # (a DIR unpacked before sources were named: kept)
    [ "$was" = "$source" ] || fail "$2 holds $was unpacked, not $1: remove $2 to unpack $1 instead (two archives\
 of the same name: rename one)"
    return
  fi
  step mkdir -p "$2.part"
  if [[ $1 == *.zip ]]; then step unzip_into "$1" "$2.part"
  else step tar -xzf "$1" -C "$2.part"; fi
  [ "$dry" = 1 ] || printf '%s\n' "$source" > "$2.source"
  step mv "$2.part" "$2"
}

unpacked_dir() {  # unpacked_dir NAME: where the archive NAME is unpacked, WORKDIR/unpacked/NAME less its suffix
  local name=$1
  name=${name%.zip} name=${name%.tgz} name=${name%.tar.gz}
  echo "$work/unpacked/$name"
}

unpacked() {  # unpacked SRC [NAME]: the archive SRC fetched (as NAME) and unpacked once; prints its folder (a local
  # folder given for SRC: that folder, which holds what the archive would)
  local archive dir
  archive=$(fetch "$1" "${2:-}") || exit  # (a command substitution does not inherit set -e)
  if [ -d "$archive" ]; then echo "$archive"; return; fi
  dir=$(unpacked_dir "${2:-$(basename "$archive")}")
  unpack "$archive" "$dir" >&2
  echo "$dir"
}

py() {  # py CODE ARG...: python -c CODE ARG..., a failure one line "error: ..." (as nmtkit's), not a traceback
  python -c 'import sys
code = sys.argv.pop(1)
try:
    exec(compile(code, "<recipes/lib.sh>", "exec"), {"__name__": "__main__"})
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)
except OSError as e:
    sys.exit(f"error: {e.filename}: {e.strerror}" if e.filename and e.strerror else f"error: {e}")
except Exception as e:
    sys.exit(f"error: {type(e).__name__}: {e}")' "$@"
}

unzip_into() {  # unzip_into ZIP DIR: the files of ZIP into DIR
  py 'import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$@"
}

segments() {  # segments SGM: the text of the <seg> lines, one a line (sacrebleu's reading of WMT's SGML files)
  py 'import re, sys
for line in open(sys.argv[1], encoding="utf-8"):
    if line.startswith("<seg "):
        print(re.sub(r"\s+", " ", re.sub(r"<seg.*?>(.*)</seg>.*?", r"\1", line).strip()))' "$1"
}

moses() {  # moses tokenize|detokenize LANG FILE: Moses' normaliser and tokenizer, or its detokenizer (sacremoses)
  py 'import sys
from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer
how, lang, path = sys.argv[1:]
normalise, tokenise = MosesPunctNormalizer(lang=lang).normalize, MosesTokenizer(lang=lang).tokenize
detokenise = MosesDetokenizer(lang=lang).detokenize
for line in open(path, encoding="utf-8"):
    if how == "tokenize":
        print(tokenise(normalise(line.strip()), escape=False, return_str=True))
    else:
        print(detokenise(line.split()))' "$@"
}

translate_unk_score() {  # translate_unk_score NAME MODEL SRC REF DICT OUT SCORES (see the header)
  local name=$1 model=$2 src=$3 ref=$4 dict=$5 out=$6 scores=$7 ext hyp
  ext=${ref##*.}
  if [ ! -e "$out/$name.test.$ext" ] || [ ! -e "$out/$name.att.h5" ]; then
    step nmtkit translate -m "$model" --beam "${BEAM:-12}" --device "$device" \
      --attention-out "$out/$name.att.h5" -i "$src" -o "$out/$name.test.$ext"
  fi
  into "$out/$name.test.unk.$ext" nmtkit replace-unk --src "$src" --attention "$out/$name.att.h5" --dict "$dict" \
    -i "$out/$name.test.$ext"
  for hyp in test test.unk; do
    into "$scores/$name.$hyp.bleu" nmtkit score --metric bleu --tokenize none -r "$ref" -i "$out/$name.$hyp.$ext" \
      --score-only
  done
  into "$scores/$name.ppl" nmtkit score --metric ppl -m "$model" --src "$src" -r "$ref" --score-only
}

needs_python() {  # needs_python MODULE MESSAGE: a Python module the recipe needs
  [ "$dry" = 1 ] || python -c "import $1" 2> /dev/null || { echo "error: $2" >&2; exit 2; }
}

flickr30k_images() {  # flickr30k_images SRC: sets images to the folder of the images, SRC fetched and unpacked
  images=$(fetch "$1")
  if [[ $images == *.tar.gz || $images == *.tgz ]]; then
    unpack "$images" "$work/images"
    images=$work/images/flickr30k-images
    [ "$dry" = 1 ] || [ -d "$images" ] || images=$work/images
  fi
}

same_lines() {  # same_lines FILE...: every file has as many lines as the first; else those under WORKDIR (the
  # recipe's, made from its inputs) are removed, so that the next run makes them again once the inputs are mended;
  # the user's own (CORPUS=...) are never touched
  [ "$dry" = 1 ] && return
  local n m file made own=() why
  n=$(wc -l < "$1")
  for file in "${@:2}"; do
    m=$(wc -l < "$file")
    [ "$m" = "$n" ] && continue
    for made in "$@"; do [[ $made == "$work"/* ]] && own+=("$made"); done
    why="$1 has $n lines but $file $m"
    [ ${#own[@]} -eq 0 ] || { rm -f "${own[@]}"; why+=" (made from the inputs, removed: mend the inputs and run again)"; }
    fail "$why"
  done
}

train() {  # train MODEL_DIR OPTION...: a training that resumes, and says when it is done
  local model=$1 args=() resume=()
  shift
  [ -e "$model/done" ] && return
  if [ -f "$model/last.pt" ]; then  # a run that was stopped goes on where it was
    resume=(--resume)
    while [ $# -gt 0 ]; do
      case $1 in
      --init-from) shift $(( $# > 1 ? 2 : 1 )) ;;
      --init-lr|--init-optimizer) shift ;;
      *) args+=("$1"); shift ;;
      esac
    done
  else
    args=("$@")
  fi
  step "${launcher[@]}" train "${args[@]}" --save-dir "$model" "${resume[@]}"
  step touch "$model/done"
}
