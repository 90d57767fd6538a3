#!/usr/bin/env bash
# Nightly CPU gate: build, run `ctest -L "determinism|mutation"`, run the full Feynman experiment (1000
# samples, both modes) and check it against golden/feynman/cpu.json; then the slow label (the
# 100,000-request engine soak and the stress run), the asan preset (ASan + UBSan, every finding
# fatal) over every test but the slow and gpu labels, and every fuzz target to 10M
# executions (ci/fuzz.sh nightly: executions, crashes and leaks per target in fuzz/summary.md).
# The sanitizer run belongs here, not in CI: it is a second build of the whole project (no cache on
# a clean clone) and the determinism label under ASan, which together would take CI's 2 cores past
# its ~30-minute budget (figures in docs/THREAT_MODEL.md). Writes into OUT (default nightly-cpu/):
# JUnit XML (ctest's and samebits'), the Markdown summary, JSON results, the fuzz summary and logs.
# OUT is a path from the caller's folder, made absolute before the script moves to the repository
# (every step, ctest's --output-junit included, writes there whatever folder it runs in).
# Exit status: 0 when every step passed, else the first failing step's status.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$(realpath -m -- "${1:-$ROOT/nightly-cpu}")"
cd "$ROOT"
mkdir -p "$OUT"
source ci/step.sh

step configure cmake --preset cpu || exit $status
step build cmake --build --preset cpu -j2 || exit $status
step determinism ctest --preset cpu -L 'determinism|mutation' --no-tests=error --output-junit "$OUT/ctest_determinism.xml"
SAMEBITS=./build/cpu/harness/samebits
step feynman "$SAMEBITS" golden check scenarios/feynman.yaml --no-progress \
  --json "$OUT/feynman.json" --markdown "$OUT/feynman.md" --junit "$OUT/feynman.junit.xml"
step feynman_ci "$SAMEBITS" golden check scenarios/feynman_ci.yaml --no-progress \
  --json "$OUT/feynman_ci.json" --markdown "$OUT/feynman_ci.md" --junit "$OUT/feynman_ci.junit.xml"
checks_rc=$status  # each later step has its own line in the summary, and the gate's status is the first failure
# The cpu test preset leaves the slow label out (its filter), so the slow tests run from the build
# folder; --no-tests=error makes a label that selects nothing a failed step, not an empty pass, and
# -V keeps the soak's "soak:" lines of a passing run in slow.log (--output-on-failure drops them),
# each behind the test's number ("522: soak: ..."), which soak.txt leaves out.
step slow ctest --test-dir build/cpu -L slow --no-tests=error -V --output-junit "$OUT/ctest_slow.xml"
slow_rc=$?
sed -En 's/^([0-9]+: )?(soak: )/\2/p' "$OUT/slow.log" > "$OUT/soak.txt"
step asan_configure cmake --preset asan &&
  step asan_build cmake --build --preset asan -j2 &&
  step asan_tests env ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="suppressions=$PWD/ci/lsan_suppressions.txt" UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --test-dir build/asan -LE 'slow|gpu' -j2 --no-tests=error --output-on-failure \
    --output-junit "$OUT/ctest_asan.xml"
asan_rc=$?
step fuzz env OUT="$OUT/fuzz" ci/fuzz.sh nightly
fuzz_rc=$?
verdict() { ((${1} == 0)) && echo "$2" || echo "FAILED (exit $1, $3)"; }
{
  echo "# samebits nightly (CPU)"
  echo
  echo "ctest -L determinism and golden checks: $(verdict $checks_rc passed 'determinism.log, feynman*.log')"
  echo
  cat "$OUT/feynman.md" 2>/dev/null
  echo
  echo "## Engine soak"
  echo
  echo "slow label (the soak and the stress run): $(verdict $slow_rc passed slow.log)"
  echo
  sed 's/^/    /' "$OUT/soak.txt" 2>/dev/null
  echo
  echo "ASan + UBSan (every test but the slow and gpu labels): $(verdict $asan_rc clean 'asan_*.log')"
  echo
  echo "Fuzzing: $(verdict $fuzz_rc clean 'fuzz.log, fuzz/')"
  echo
  cat "$OUT/fuzz/summary.md" 2>/dev/null
} > "$OUT/summary.md"
echo "outputs in $OUT/ (summary.md, *.junit.xml, ctest_determinism.xml, *.json, *.log)"
exit $status
