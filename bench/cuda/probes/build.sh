#!/usr/bin/env bash
# Builds the CUDA bench and test binaries with timing probes applied: patches that change a kernel
# on purpose (a step removed, another blocking) to measure what the rest costs; the folder also
# keeps variants that were measured and not kept (their patch says so), to be built again. A
# probe's numbers are only meaningful beside the unpatched kernel's, measured in the same call on
# the H200 (bench/cuda/notes/prefill-time.md, prefill.md and decode-small-batches.md say which probe
# measured what).
#   bench/cuda/probes/build.sh [--check] OUT_DIR PATCH...
# Each patch file opens with `Base: <commit>`, the commit it was written against; the patches are
# applied in order to a temporary worktree of that commit (they must share it), so a probe builds
# as it was measured whatever main has become since. The worktree is built with the cuda preset
# (ccache when present) and bench_cuda_attention, bench_cuda_matmul and gpu_tests are copied to
# OUT_DIR; --check stops after applying the patches. Exit status: 0 done, 1 a patch does not apply
# or the build fails, 2 bad arguments.
set -euo pipefail

usage() { echo "usage: bench/cuda/probes/build.sh [--check] OUT_DIR PATCH..." >&2; exit 2; }
check=0
if [[ "${1:-}" == "--check" ]]; then check=1; shift; fi
[[ $# -ge 2 ]] || usage
out=$1; shift
repo=$(git rev-parse --show-toplevel)

base=""
patches=()
for p in "$@"; do
  [[ -f "$p" ]] || { echo "probes: $p: no such patch file" >&2; exit 2; }
  b=$(sed -n '1s/^Base: \([0-9a-f]\{7,40\}\)$/\1/p' "$p")
  [[ -n "$b" ]] || { echo "probes: $p: line 1 is not 'Base: <commit>'" >&2; exit 2; }
  [[ -z "$base" || "$b" == "$base" ]] || { echo "probes: $p: Base $b differs from the first patch's $base" >&2; exit 2; }
  base=$b
  patches+=("$(cd "$(dirname "$p")" && pwd)/$(basename "$p")")
done
git -C "$repo" cat-file -e "$base^{commit}" 2>/dev/null ||
  { echo "probes: Base $base is not a commit of this repository (a shallow clone?)" >&2; exit 1; }

tree=$(mktemp -d "${TMPDIR:-/tmp}/probe-tree.XXXXXX")
cleanup() { git -C "$repo" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"; }
trap cleanup EXIT
git -C "$repo" worktree add --detach --quiet "$tree" "$base"
for p in "${patches[@]}"; do
  git -C "$tree" apply "$p" 2>/dev/null || { echo "probes: $p does not apply to $base" >&2; exit 1; }
done
if ((check)); then
  echo "probes: ${#patches[@]} patch(es) apply to $base"
  exit 0
fi

launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$tree"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
(cd "$tree" && cmake --preset cuda "${launcher[@]}" >/dev/null &&
  cmake --build build/cuda --target bench_cuda_attention bench_cuda_matmul gpu_tests) ||
  { echo "probes: the build of $base with ${#patches[@]} patch(es) failed" >&2; exit 1; }
mkdir -p "$out"
cp "$tree/build/cuda/bench/cuda/bench_cuda_attention" "$tree/build/cuda/bench/cuda/bench_cuda_matmul" \
  "$tree/build/cuda/tests/gpu/gpu_tests" "$out/"
echo "probes: $out/bench_cuda_attention, bench_cuda_matmul and gpu_tests ($base + ${#patches[@]} patch(es))"
