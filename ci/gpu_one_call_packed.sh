#!/usr/bin/env bash
# Issue 9's one call from an archive of ci/pack_gpu_call.sh, as the device machine runs it:
#   ci/gpu_one_call_packed.sh ARCHIVE OUT [SECONDS]
# Unpacks ARCHIVE into a temporary folder and runs ci/gpu_one_call.sh on its bm/ with OUT and
# SECONDS. REQUIRE_CARD defaults to H200 (the issue's targets are the H200's: on another card
# nothing runs, exit 3); REQUIRE_CARD= (empty) runs on any card. OUT ends as the device machine
# can return it whole (at the end of this file): one_call.tgz alone, or out.tgz for more than 8 files.
# ON_OTHER_CARD (a bash command line, optional): what to run instead on a card that is not
# REQUIRE_CARD's, so that a request given another card than it asked for still measures what that
# card can answer (a sanitizer sweep, a side-by-side bench): run from the repository root with
# BIN_DIR (the unpacked binaries), OUT and LD_LIBRARY_PATH (BIN_DIR/lib first) set, after the
# card's line is in OUT/gpu.txt. E.g.
#   ON_OTHER_CARD='ci/gpu_sanitizers.sh "$BIN_DIR/gpu_tests" "$OUT/san" 1 400 GpuEngine.*' \
#     ci/gpu_one_call_packed.sh .carry/call.tar.xz "$OUT" 540
# Exit status: ci/gpu_one_call.sh's (3: another card, nothing run), or ON_OTHER_CARD's where it
# ran; 2 bad arguments or an archive that does not unpack.
set -uo pipefail
usage="usage: ci/gpu_one_call_packed.sh ARCHIVE OUT [SECONDS]"
(($# >= 2 && $# <= 3)) || { echo "gpu_one_call_packed: $usage" >&2; exit 2; }
[[ -f $1 ]] || { echo "gpu_one_call_packed: ARCHIVE $1: no such file" >&2; exit 2; }
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
tar -xJf "$1" -C "$work" 2>"$work/tar.err" && [[ -d $work/bm ]] ||
  { echo "gpu_one_call_packed: ARCHIVE $1: does not unpack to bm/ ($(head -1 "$work/tar.err"))" >&2; exit 2; }
REQUIRE_CARD=${REQUIRE_CARD-H200} "$(dirname "$0")/gpu_one_call.sh" "$work/bm" "$2" ${3:+"$3"}
rc=$?
if ((rc == 3)) && [[ -n ${ON_OTHER_CARD:-} ]]; then
  echo "gpu_one_call_packed: running ON_OTHER_CARD on this card instead: $ON_OTHER_CARD" >&2
  (cd "$(dirname "$0")/.." && BIN_DIR="$work/bm" OUT="$(cd "$2" && pwd)" \
    LD_LIBRARY_PATH="$work/bm/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}" bash -c "$ON_OTHER_CARD")
  rc=$?
fi
# What OUT keeps for the trip back (the device machine returns at most 8 files of it): the call's
# own archive alone where it wrote one; otherwise, where OUT holds more than 8 files (an
# ON_OTHER_CARD run's, a call cut short), all of them packed into OUT/out.tgz.
if [[ -s $2/one_call.tgz ]]; then
  find "$2" -mindepth 1 ! -name one_call.tgz -delete
elif (($(find "$2" -type f | wc -l) > 8)); then
  tar -czf "$work/out.tgz" -C "$2" . && find "$2" -mindepth 1 -delete && mv "$work/out.tgz" "$2/out.tgz"
fi
exit $rc
