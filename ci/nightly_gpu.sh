#!/usr/bin/env bash
# Nightly GPU gate (on the H200 machine): build with CUDA, run the determinism, mutation and gpu
# tests with SAMEBITS_REQUIRE_GPU=1 (a missing device fails every GPU test instead of skipping it;
# gpu_tests holds the CUDA engine invariance sweep, its inverse and the CUDA mutation suite with its
# detection table), run the Feynman experiment on the CUDA backend and check
# golden/feynman/<cuda id>.json (goldens are keyed by backend id: CPU and CUDA bits are not
# promised equal; default-mode goldens also by device, see harness/golden/run_identity.h).
# compute-sanitizer memcheck and racecheck run every gpu test (ci/gpu_sanitizers.sh).
# Writes JUnit, Markdown and JSON into OUT (a path from the caller's folder; default nightly-gpu/ in
# the repository).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$(realpath -m -- "${1:-$ROOT/nightly-gpu}")"
cd "$ROOT"
mkdir -p "$OUT"
source ci/step.sh

step configure cmake --preset cuda || exit $status
step build cmake --build --preset cuda -j"$(nproc)" || exit $status
export SAMEBITS_REQUIRE_GPU=1
step tests ctest --test-dir build/cuda -L 'determinism|mutation|gpu' --no-tests=error --output-on-failure --output-junit "$OUT/ctest.xml"
SAMEBITS=./build/cuda/harness/samebits
# `golden check` exits 2 when there is no CUDA golden yet; `run` then still reports both modes.
if "$SAMEBITS" info | grep -q 'cuda: unavailable'; then
  echo "no CUDA device: the GPU gate cannot pass without one"; exit 1
fi
# compute-sanitizer memcheck (leaks included) and racecheck over every gpu test, each test case its
# own process (ci/gpu_sanitizers.sh: racecheck on the reduced shape lists; the mutation suite left
# out). Results in OUT/sanitizers.md, logs in OUT/sanitizers.log.
step sanitizers ci/gpu_sanitizers.sh build/cuda/tests/gpu/gpu_tests "$OUT" 4 600
step feynman_ci "$SAMEBITS" golden check scenarios/feynman_ci.yaml --backend cuda --no-progress \
  --json "$OUT/feynman_ci.json" --markdown "$OUT/feynman_ci.md" --junit "$OUT/feynman_ci.junit.xml"
step feynman "$SAMEBITS" golden check scenarios/feynman.yaml --backend cuda --no-progress \
  --json "$OUT/feynman.json" --markdown "$OUT/feynman.md" --junit "$OUT/feynman.junit.xml" ||
  step feynman_run "$SAMEBITS" run scenarios/feynman.yaml --backend cuda --no-progress \
    --json "$OUT/feynman.json" --markdown "$OUT/feynman.md" --junit "$OUT/feynman.junit.xml"
cp "$OUT/feynman.md" "$OUT/summary.md" 2>/dev/null
exit $status
