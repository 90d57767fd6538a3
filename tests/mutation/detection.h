// Detection of the mutant backends at two levels:
//   sweep — the engine invariance sweep (tests/engine/invariance_sweep.h) in invariant mode on the
//           mutant, and the op sweeps (tests/mutation/op_sweep.h: linear, rmsnorm and sample, a
//           row alone vs inside batches): caught when some target (or row) differs from itself
//           served alone;
//   gate  — `samebits golden check scenarios/mutation.yaml --mode invariant` with the mutant
//           registered as the backend: caught when it exits 1 and names the divergence (the golden
//           mismatch's sample and step, or invariant mode's own divergence).
// The detection table prints source x level -> caught / MISSED (a gate-marginal source's gate miss:
// "marginal").
#pragma once
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "tests/mutation/mutants.h"

namespace samebits::testing {

struct GateOutcome {
  int exit_code = -1;
  std::string state;   // the invariant mode's golden state
  std::string detail;  // its detail (names sample and step on a mismatch)
  int unique_logit_streams = 0;
  bool caught() const;
};

struct Detection {
  std::string source;
  bool gate_marginal = false;  // Mutant::gate_marginal
  bool engine_caught = false, ops_caught = false;  // the two sweeps
  bool sweep_caught = false, gate_caught = false;   // the two levels (sweep: either sweep)
  std::string sweep_detail, gate_detail;
};

// The source tree: $SAMEBITS_SOURCE_DIR when set (a binary run on another machine), else the
// compile-time one.
std::string source_root();

// The gate on `backend` (registered under a test name; its id picks the golden file).
GateOutcome run_gate(const Backend& backend, int threads);
Detection detect(const Backend& real, const Mutant& mutant, int gate_threads);
// What a detection lacks, "" when nothing: a sweep and the gate must each catch the source; a
// gate-marginal one the op sweep, its gate result only reported.
std::string detection_misses(const Mutant& mutant, const Detection& d);
std::string detection_table(const std::string& backend_id, const std::vector<Detection>& rows);

}  // namespace samebits::testing
