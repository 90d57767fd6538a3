// Where a step's time goes: the model brackets every op with an OpScope naming its kind ("linear
// 4096x4096", "attention decode", "rmsnorm", ...), and the backend's OpTimer measures each
// bracket in its own clock. A synchronous backend (the CPU) reads the host clock at both ends; an
// asynchronous one (CUDA) records events on the stream and reads their distance once the step's
// work has finished, so timing adds no synchronisation. Timing is off unless ExecContext::timer
// is set: an OpScope without a timer does nothing.
//
// SyncStats count the points where the host waits for the device (a blocking copy, a stream
// synchronisation) and the time spent waiting there: the host time of a step is its wall time
// minus that wait.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/ops.h"

namespace samebits {

struct OpTime {
  int64_t calls = 0;
  double seconds = 0;       // on the backend's clock (device time on a GPU)
  double host_seconds = 0;  // host time from begin to end: issuing the op (all of it on the CPU)
};

// Accumulated time per op kind, in name order.
using OpTimes = std::map<std::string, OpTime>;

class OpTimer {
 public:
  virtual ~OpTimer() = default;
  // The work issued between begin(kind) and the next end() belongs to kind.
  virtual void begin(const std::string& kind) = 0;
  virtual void end() = 0;
  // Adds every bracket closed since the last collect() to *times, plus the span from the first
  // begin to the last end under kStepSpan. On an asynchronous backend call it after the step's
  // work has been waited for (it then reads finished events and does not block).
  virtual absl::Status collect(OpTimes* times) = 0;
};

// The span of the brackets collected together (device time of the step from its first op to its
// last): span minus the sum of the ops is time the device waited between ops.
inline constexpr char kStepSpan[] = "(step span)";

// A timer on the host clock, right for backends whose ops return when their work is done.
class HostOpTimer : public OpTimer {
 public:
  void begin(const std::string& kind) override;
  void end() override;
  absl::Status collect(OpTimes* times) override;

 private:
  using Clock = std::chrono::steady_clock;
  std::vector<std::pair<std::string, double>> closed_;
  std::string open_kind_;
  Clock::time_point open_, first_, last_;
  bool any_ = false;
};

// Brackets one op: begin on construction, end on destruction; nothing without a timer.
class OpScope {
 public:
  OpScope(const ExecContext& ctx, const std::string& kind) : timer_(ctx.timer) {
    if (timer_ != nullptr) timer_->begin(kind);
  }
  ~OpScope() {
    if (timer_ != nullptr) timer_->end();
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  OpTimer* timer_;
};

struct SyncStats {
  int64_t syncs = 0;          // points where the host waited for the device
  double wait_seconds = 0;    // host time spent waiting there
};

}  // namespace samebits
