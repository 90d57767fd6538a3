// Shared pieces of the CUDA benchmarks: CUDA-event timing of a batch of launches (manual time),
// a reporter that collects every run for the summary tables printed at the end, and the measured
// device-copy bandwidth used as the memory floor.
#pragma once
#include <benchmark/benchmark.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace samebits::bench {

// The CUDA backend, or nullptr (then every benchmark skips with an error message).
const Backend* gpu();

// Seconds per call of fn, timed with CUDA events over `reps` calls after one warm-up call.
// fn(i) is the i-th call (to rotate inputs). Returns a negative value on a CUDA error.
double time_per_call(const std::function<void(int)>& fn, int reps);
// Seconds per call of fn(stream, i) from replays of one CUDA graph that holds `reps` calls captured on
// a stream of its own: the device's time alone, as an engine that captures its steps sees it (the
// host work of each call is done once, at capture). Negative on a CUDA error.
double time_per_call_graph(const std::function<void(void* stream, int)>& fn, int reps);
// Runs the state's iterations as manual time, each the seconds per call that time_once() returns,
// and gives their mean; once one is <= 0 (a CUDA error) the case stops with SkipWithError(error)
// and the result is negative.
double mean_time_per_call(benchmark::State& state, const std::function<double()>& time_once, const char* error);
// Picks reps so that one timed batch lasts about target_seconds.
int reps_for(const std::function<void(int)>& fn, double target_seconds);

// Device-to-device copy bandwidth in bytes/s (read + written), measured once.
double copy_bandwidth();

// Collects runs: name -> counters (and real time per iteration in seconds).
struct Collected {
  double seconds = 0;
  std::map<std::string, double> counters;
};
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override;
  const std::map<std::string, Collected>& results() const { return results_; }

 private:
  std::map<std::string, Collected> results_;
};

}  // namespace samebits::bench
