#!/usr/bin/env bash
# Issue 9's one call from an archive of ci/pack_gpu_call.sh, as the device machine runs it:
#   ci/gpu_one_call_packed.sh ARCHIVE OUT [SECONDS]
# Unpacks ARCHIVE into a temporary folder and runs ci/gpu_one_call.sh on its bm/ with OUT and
# SECONDS. REQUIRE_CARD defaults to H200 (the issue's targets are the H200's: on another card
# nothing runs, exit 3); REQUIRE_CARD= (empty) runs on any card. The device tool brings back only a
# few files of OUT, so when the call has packed everything into OUT/one_call.tgz the rest of OUT is
# deleted; a call cut short before that keeps its logs.
# Exit status: ci/gpu_one_call.sh's; 2 bad arguments or an archive that does not unpack.
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
[[ -s $2/one_call.tgz ]] && find "$2" -mindepth 1 ! -name one_call.tgz -delete
exit $rc
