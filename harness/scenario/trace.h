// A trace file (JSON) holds the schedule a run actually used, enough to reproduce it exactly:
// the run's identity (model spec + weights digest, backend, engine settings), every request (prompt tokens,
// sampling, lengths), and per mode the engine step at which each request was submitted, every
// engine step's record, and the digest each target sample produced.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/engine/engine.h"
#include "harness/scenario/runner.h"
#include "harness/scenario/scenario.h"
#include "harness/scenario/workload.h"
#include "nlohmann/json.hpp"

namespace samebits {

inline constexpr int kTraceVersion = 2;

struct TraceRun {
  Mode mode = Mode::kInvariant;
  std::vector<SubmittedAt> submitted;
  std::vector<StepRecord> records;
  std::vector<uint64_t> digests;  // by sample
};

struct Trace {
  RunIdentity identity;  // the recorded run's (harness/golden/run_identity.h)
  std::vector<Arrival> requests;
  std::vector<TraceRun> runs;
};

Trace make_trace(const RunIdentity& identity, const Workload& workload);
TraceRun trace_run_of(const ModeRun& run);

nlohmann::json trace_to_json(const Trace& trace);
absl::StatusOr<Trace> trace_from_json(const nlohmann::json& json, const std::string& file);
// Writes the file atomically, or, given `outputs`, stages it there (written when they commit).
absl::Status write_trace(const Trace& trace, const std::string& path, OutputFiles* outputs = nullptr);
absl::StatusOr<Trace> read_trace(const std::string& path);

}  // namespace samebits
