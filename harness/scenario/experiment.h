// One experiment end to end: load the scenario, apply command-line overrides, resolve the model and
// the backend, generate the seeded workload, serve it in each mode (simulated or live), and analyse
// the digests into RunResults. The CLI and the determinism tests both start here.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/golden/results.h"
#include "harness/scenario/runner.h"
#include "harness/scenario/scenario.h"
#include "harness/scenario/trace.h"
#include "harness/scenario/workload.h"
#include "models/tiny_qwen/model_source.h"

namespace samebits {

// Progress of one mode's run: `done` of `total` target samples complete. Called with done = 0 when
// the mode starts, as samples complete, and once with finished = true when the mode's run ends
// (also when it fails). The caller decides how (and whether) to show it.
struct ProgressEvent {
  Mode mode;
  int done = 0;
  int total = 0;
  bool finished = false;
};
using ProgressCallback = std::function<void(const ProgressEvent&)>;

struct ExperimentOptions {
  std::string backend;      // "" = the scenario's
  std::vector<Mode> modes;  // empty = the scenario's
  int samples = 0;          // 0 = the scenario's
  std::string model;        // "" = the scenario's
  int threads = 0;          // CPU backend threads; 0 = OpenMP default
  bool live = false;
  int clients = 0;          // live client threads; 0 = the scenario's
  bool keep_records = false;
  ProgressCallback progress;  // empty = no progress reported
  bool in_process = false;  // ignore the scenario's target: run the built-in engine
  std::string target_url;   // client mode: overrides target.url (or adds a target, with target_model)
  std::string target_model;
  bool profile = false;       // per-op timing (RunFigures::op_times)
  bool graphs = true;         // decode steps from recorded graphs (EngineConfig::graphs)
  bool schedule_ahead = true; // EngineConfig::schedule_ahead
};

struct Experiment {
  Scenario scenario;  // with overrides applied
  ModelSource model;
  const Backend* backend = nullptr;
  Workload workload;
  std::vector<ModeRun> runs;
  RunResults results;  // golden status still "none"
  std::string backend_id;  // the built-in backend's id, or http-<model> in client mode
  Trace trace() const;
};

absl::StatusOr<Experiment> run_experiment(const std::string& scenario_path, const ExperimentOptions& options);
// Loads the scenario and applies the overrides without running anything.
absl::StatusOr<Scenario> load_with_overrides(const std::string& scenario_path, const ExperimentOptions& options);

// The backend id a scenario's results and goldens carry: the built-in backend's, or http-<model>
// when it names a target. Errors when the backend is unavailable.
absl::StatusOr<std::string> scenario_backend_id(const Scenario& scenario);

// Where goldens live: the `golden/` folder beside the scenario's `scenarios/` folder when it is in
// one, else the source tree's golden/.
std::string default_golden_dir(const std::string& scenario_path);

// RunResults from mode runs (also used by replay).
RunResults make_results(const RunIdentity& identity, const TextTokenizer& tokenizer, std::vector<ModeRun>& runs);

}  // namespace samebits
