// The golden store: golden/<scenario>/<backend-id>.json holds what a scenario's run must produce.
//   schema version; the identity of the run that recorded it (harness/golden/run_identity.h says
//   which of its fields each mode depends on); per mode the expected completion digests (invariant: the one digest;
//   default under the seeded schedule: digest -> count, and each sample's digest), the step digests
//   of each expected logit stream (top 32 bits, enough to name the first differing step), fork
//   statistics, the main completion's text for humans, and the digest of the engine's schedule
//   (default-mode digests are only comparable under the same schedule).
// Written only by `samebits golden update`, atomically. A golden whose identity differs from the
// run's in a field the mode depends on is "not comparable" (naming the field), never a pass or a
// mismatch.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/golden/results.h"
#include "nlohmann/json.hpp"

namespace samebits {

inline constexpr int kGoldenSchemaVersion = 2;
inline constexpr int kGoldenStepHexDigits = 8;

struct GoldenFork {
  int count = 0;
  int fork_position = -1;
  std::string text_before, text_main, text_this;
};

struct GoldenMode {
  Mode mode = Mode::kInvariant;
  int samples = 0;
  int unique_completions = 0;
  int unique_logit_streams = 0;
  std::map<uint64_t, int> expected;           // completion digest -> count
  std::vector<uint64_t> sample_digests;       // by sample index
  std::map<uint64_t, std::vector<uint64_t>> stream_steps;  // digest -> step digests (top 32 bits)
  int first_token_divergence = -1, first_logit_divergence = -1;
  int samples_token_diverged = 0, samples_logit_diverged = 0;
  std::vector<GoldenFork> forks;              // completions other than the main one
  std::string main_completion_text;
  uint64_t schedule_digest = 0;  // the engine's schedule of the seeded workload (see RunFigures)
};

struct Golden {
  std::string scenario;
  RunIdentity identity;
  std::vector<GoldenMode> modes;
  const GoldenMode* find(Mode m) const;
};

Golden golden_from_results(const RunResults& results);
nlohmann::json golden_to_json(const Golden& golden);
// Malformed input: one line naming the file and the field.
absl::StatusOr<Golden> golden_from_json(const nlohmann::json& json, const std::string& file);

// <golden_dir>/<scenario>/<backend_id>.json
std::string golden_path(const std::string& golden_dir, const std::string& scenario, const std::string& backend_id);
// nullopt when the file does not exist; an error when it exists but is unreadable or malformed.
absl::StatusOr<std::optional<Golden>> read_golden(const std::string& path);
// Writes the file atomically, or, given `outputs`, stages it there (written when they commit).
absl::Status write_golden(const Golden& golden, const std::string& path, OutputFiles* outputs = nullptr);

// One mode against the golden: pass, mismatch (naming mode, sample, first differing step), or
// not comparable. `golden` nullopt -> state "none".
GoldenStatus check_mode(const std::optional<Golden>& golden, const RunResults& run, const ModeResult& mode);
// Fills every mode's golden status; true when none is a mismatch.
bool check_against_golden(const std::optional<Golden>& golden, RunResults* run);

}  // namespace samebits
