#include "kernels/op_timer.h"

namespace samebits {

void HostOpTimer::begin(const std::string& kind) {
  open_kind_ = kind;
  open_ = Clock::now();
  if (!any_) first_ = open_;
  any_ = true;
}

void HostOpTimer::end() {
  last_ = Clock::now();
  closed_.emplace_back(open_kind_, std::chrono::duration<double>(last_ - open_).count());
}

absl::Status HostOpTimer::collect(OpTimes* times) {
  for (const auto& [kind, seconds] : closed_) {
    OpTime& t = (*times)[kind];
    ++t.calls;
    t.seconds += seconds;
    t.host_seconds += seconds;
  }
  if (any_) {
    OpTime& span = (*times)[kStepSpan];
    ++span.calls;
    span.seconds += std::chrono::duration<double>(last_ - first_).count();
    span.host_seconds += std::chrono::duration<double>(last_ - first_).count();
  }
  closed_.clear();
  any_ = false;
  return absl::OkStatus();
}

}  // namespace samebits
