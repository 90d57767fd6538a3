// Per-op timing on the device: an event recorded on the stream at each bracket's begin and end
// (kernels/op_timer.h). Events come from a pool that grows to the largest step and is reused, so
// a step costs two cudaEventRecord calls per op and no synchronisation; collect() reads the
// distances after the step's work has been waited for.
#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/op_timer.h"

namespace samebits::cuda {
namespace {

class EventOpTimer : public OpTimer {
 public:
  explicit EventOpTimer(cudaStream_t stream) : stream_(stream) {}
  ~EventOpTimer() override {
    for (cudaEvent_t e : pool_) cudaEventDestroy(e);
  }

  void begin(const std::string& kind) override {
    kinds_.push_back(kind);
    host_begin_ = Clock::now();
    if (kinds_.size() == 1) host_first_ = host_begin_;
    record();
  }
  void end() override {
    record();
    host_last_ = Clock::now();
    host_.push_back(std::chrono::duration<double>(host_last_ - host_begin_).count());
  }

  absl::Status collect(OpTimes* times) override {
    if (!error_.ok()) return error_;
    if (used_ % 2 != 0) return absl::FailedPreconditionError("op timer: a bracket is still open");
    if (used_ == 0) return absl::OkStatus();
    SAMEBITS_CUDA_TRY(cudaEventSynchronize(pool_[used_ - 1]));
    for (size_t i = 0; i < kinds_.size(); ++i) {
      float ms = 0;
      SAMEBITS_CUDA_TRY(cudaEventElapsedTime(&ms, pool_[2 * i], pool_[2 * i + 1]));
      OpTime& t = (*times)[kinds_[i]];
      ++t.calls;
      t.seconds += double(ms) * 1e-3;
      t.host_seconds += host_[i];
    }
    float span_ms = 0;
    SAMEBITS_CUDA_TRY(cudaEventElapsedTime(&span_ms, pool_[0], pool_[used_ - 1]));
    OpTime& span = (*times)[kStepSpan];
    ++span.calls;
    span.seconds += double(span_ms) * 1e-3;
    span.host_seconds += std::chrono::duration<double>(host_last_ - host_first_).count();
    kinds_.clear();
    host_.clear();
    used_ = 0;
    return absl::OkStatus();
  }

 private:
  void record() {
    if (!error_.ok()) return;
    if (used_ == pool_.size()) {
      cudaEvent_t e = nullptr;
      if (cudaError_t err = cudaEventCreate(&e); err != cudaSuccess) {
        error_ = cuda_status(err, "cudaEventCreate (op timer)");
        return;
      }
      pool_.push_back(e);
    }
    if (cudaError_t err = cudaEventRecord(pool_[used_], stream_); err != cudaSuccess) {
      error_ = cuda_status(err, "cudaEventRecord (op timer)");
      return;
    }
    ++used_;
  }

  using Clock = std::chrono::steady_clock;
  cudaStream_t stream_;
  std::vector<double> host_;  // host seconds of each closed bracket
  Clock::time_point host_begin_, host_first_, host_last_;
  std::vector<cudaEvent_t> pool_;
  size_t used_ = 0;
  std::vector<std::string> kinds_;
  absl::Status error_;
};

}  // namespace

std::unique_ptr<OpTimer> make_event_op_timer(const ExecContext& ctx) {
  return std::make_unique<EventOpTimer>(stream_of(ctx));
}

}  // namespace samebits::cuda
