// Drives the engine through a workload, one mode at a time. Simulated mode: requests are
// submitted at their scheduled step indices (an idle engine skips ahead to the next arrival);
// an observer digests every target token's logits on the fly. Every engine step's record and
// the engine step at which each request was submitted are kept, so the run can be written as a
// trace and replayed exactly.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "harness/engine/engine.h"
#include "harness/golden/results.h"
#include "harness/scenario/scenario.h"
#include "harness/scenario/workload.h"
#include "models/tiny_qwen/model_source.h"

namespace samebits {

// Where a request entered the engine: before engine step `engine_step` ran.
struct SubmittedAt {
  int64_t engine_step = 0;
  uint64_t request_id = 0;
};

// One mode's run, as the engine served it.
struct ModeRun {
  Mode mode = Mode::kInvariant;
  std::vector<TargetObservation> targets;  // by sample
  RunFigures figures;
  std::vector<SubmittedAt> submitted;      // in submission order
  std::vector<StepRecord> records;         // every engine step, when kept
};

struct RunSetup {
  const Scenario* scenario = nullptr;
  const ModelSource* model = nullptr;
  const Backend* backend = nullptr;
  int num_threads = 0;        // CPU backend threads (0 = OpenMP default)
  bool keep_records = false;  // keep StepRecords (for traces)
  // Called now and then with (target samples finished, total).
  std::function<void(int, int)> progress;
  bool profile = false;            // per-op timing (EngineConfig::profile)
  bool graphs = true;              // EngineConfig::graphs
  bool schedule_ahead = true;      // EngineConfig::schedule_ahead
  int64_t rss_baseline_bytes = 0;  // host RSS before any model: RunFigures::host_rss_baseline_bytes
};

// Host memory of this process (from /proc/self/status; 0 where unavailable).
struct HostRss {
  int64_t current = 0;  // VmRSS
  int64_t peak = 0;     // VmHWM
};
HostRss host_rss_bytes();

// Checks that every request of the workload fits the model and the KV cache, naming the field.
absl::Status check_fits(const RunSetup& setup, const Workload& workload);

absl::StatusOr<ModeRun> run_simulated(const RunSetup& setup, const Workload& workload, Mode mode);

// Pieces shared with live mode and replay.
namespace runner_detail {
struct Session {
  std::unique_ptr<Model> model;
  std::unique_ptr<Engine> engine;
  std::vector<TargetObservation> targets;  // by sample
  // Every request by id (ids are any uint64: a trace's ids index nothing).
  absl::flat_hash_map<uint64_t, const Arrival*> arrival_of_id;
  int sample_of(uint64_t id) const {
    auto it = arrival_of_id.find(id);
    return it == arrival_of_id.end() ? -1 : it->second->sample;
  }
  int targets_done = 0;
  int64_t stalled_steps = 0;
  std::string observer_error;  // first inconsistency the observer saw
  uint64_t schedule_digest = 0;
  SetupTimes setup;
};
absl::StatusOr<std::unique_ptr<Session>> open_session(const ModelSource& model, const Backend& backend,
                                                      const EngineConfig& config,
                                                      const std::vector<Arrival>& arrivals, int samples);
// A run's session: the workload checked against the model and cache (check_fits), the engine
// configured from the scenario and the setup's options (profile, graphs, schedule_ahead).
// Simulated and live runs open theirs here; replay configures its engine from the trace.
absl::StatusOr<std::unique_ptr<Session>> open_run_session(const RunSetup& setup, const Workload& workload,
                                                          Mode mode);
// The KV cache a session may allocate in host memory (the CPU backend; docs/THREAT_MODEL.md:
// bounded memory), counted as fp32. A GPU's cache is bounded by the device's memory.
inline constexpr int64_t kMaxKvCacheBytes = int64_t(16) << 30;
// Collects finished requests; an error naming the request and the engine's reason when any
// request (target or background) was rejected, or when a target's tokens disagree with what the
// observer saw.
absl::Status collect_finished(Session& session);
// Runs one step (forced when `forced`), checks progress, keeps the record when asked.
absl::Status run_step(Session& session, const StepRecord* forced, ModeRun* out, bool keep_records);
RunFigures figures_of(const Engine& engine, double wall_seconds);
// XXH3 over one step's schedule: per entry request id, start position, token count, samples;
// then the preempted and admitted ids (all little-endian u64).
uint64_t schedule_step_digest(const StepRecord& record);
// Collects the last finished requests, checks that every target finished, fills out's figures
// (wall time since `start`) and targets.
absl::Status finish_run(Session& session, std::chrono::steady_clock::time_point start, ModeRun* out);
}  // namespace runner_detail

}  // namespace samebits
