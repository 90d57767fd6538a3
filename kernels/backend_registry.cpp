// Backend lookup by name. The CUDA table lives in kernels/cuda/ and exists only in CUDA builds.
#include "kernels/backend.h"

namespace samebits {

#if defined(SAMEBITS_HAVE_CUDA)
const Backend* cuda_backend_if_available(std::string* why);  // kernels/cuda/backend_cuda.cpp
#endif

const Backend* cuda_backend(std::string* why) {
#if defined(SAMEBITS_HAVE_CUDA)
  return cuda_backend_if_available(why);
#else
  if (why) *why = "this build has no CUDA backend (configure with -DSAMEBITS_CUDA=ON)";
  return nullptr;
#endif
}

const Backend* find_backend(const std::string& name, std::string* why) {
  if (name == "cpu") return &cpu_backend();
  if (name == "cuda") return cuda_backend(why);
  if (why) *why = "unknown backend '" + name + "' (expected cpu or cuda)";
  return nullptr;
}

}  // namespace samebits

namespace samebits {

std::unique_ptr<OpTimer> make_op_timer(const Backend& backend, const ExecContext& ctx) {
  if (backend.make_op_timer != nullptr) return backend.make_op_timer(ctx);
  return std::make_unique<HostOpTimer>();
}

SyncStats sync_stats(const Backend& backend) {
  return backend.sync_stats != nullptr ? backend.sync_stats() : SyncStats{};
}

}  // namespace samebits
