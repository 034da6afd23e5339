#!/usr/bin/env bash
# English -> French on the LibreOffice help at CPU scale: rnnsearch, target attention warm-started from it and
# bitatt-rnn compared in about an hour on one 2-core machine, with BLEU by source length and attention pictures at
# the end. The corpus (the help pages of the Debian packages libreoffice-help-en-us and -fr, about 31,000 training
# pairs), the stages, the inputs (CORPUS, LO_DEBS, DEBIAN_MIRROR, LO_VERSION), the settings and the outputs are
# recipes/libreoffice.sh's.
#
# Usage: recipes/libreoffice_enfr.sh [--dry-run] [--gpus N] [WORKDIR]   (default WORKDIR ./libreoffice-enfr)
#   --dry-run  prints each step's command and runs none (creates nothing)
#   --gpus N   trains under 'torchrun --nproc-per-node N -m nmtkit train' (one process per GPU)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=libreoffice.sh
source "$(dirname "$0")/libreoffice.sh"
options libreoffice-enfr "$@"
libreoffice_experiment fr
