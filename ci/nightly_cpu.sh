#!/usr/bin/env bash
# Nightly CPU gate: build, run `ctest -L "determinism|mutation"`, run the full Feynman experiment (1000
# samples, both modes) and check it against golden/feynman/cpu.json. Writes into OUT (default
# nightly-cpu/): JUnit XML (ctest's and samebits'), the Markdown summary, JSON results and logs.
# Exit status: 0 when every step passed, else the first failing step's status.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-nightly-cpu}"
mkdir -p "$OUT"
source ci/step.sh

step configure cmake --preset cpu || exit $status
step build cmake --build --preset cpu -j2 || exit $status
step determinism ctest --preset cpu -L 'determinism|mutation' --output-junit "$PWD/$OUT/ctest_determinism.xml"
SAMEBITS=./build/cpu/harness/samebits
step feynman "$SAMEBITS" golden check scenarios/feynman.yaml --no-progress \
  --json "$OUT/feynman.json" --markdown "$OUT/feynman.md" --junit "$OUT/feynman.junit.xml"
step feynman_ci "$SAMEBITS" golden check scenarios/feynman_ci.yaml --no-progress \
  --json "$OUT/feynman_ci.json" --markdown "$OUT/feynman_ci.md" --junit "$OUT/feynman_ci.junit.xml"
{
  echo "# samebits nightly (CPU)"
  echo
  echo "ctest -L determinism and golden checks: $([ $status -eq 0 ] && echo passed || echo "FAILED (exit $status)")"
  echo
  cat "$OUT/feynman.md" 2>/dev/null
} > "$OUT/summary.md"
echo "outputs in $OUT/ (summary.md, *.junit.xml, ctest_determinism.xml, *.json, *.log)"
exit $status
