// Backend lookup by name. The CUDA table lives in kernels/cuda/ and exists only in CUDA builds.
#include <map>
#include <mutex>

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

namespace {

struct Registered {
  std::mutex mutex;
  std::map<std::string, const Backend*> by_name;
};

Registered& registered() {
  static Registered* r = new Registered();
  return *r;
}

}  // namespace

void register_backend(const std::string& name, const Backend* backend) {
  Registered& r = registered();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (backend == nullptr) {
    r.by_name.erase(name);
  } else {
    r.by_name[name] = backend;
  }
}

const Backend* find_backend(const std::string& name, std::string* why) {
  if (name == "cpu") return &cpu_backend();
  if (name == "cuda") return cuda_backend(why);
  {
    Registered& r = registered();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (auto it = r.by_name.find(name); it != r.by_name.end()) return it->second;
  }
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
