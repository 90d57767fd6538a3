// Backend memory owned RAII-style: every buffer the model uses comes from Backend::alloc and goes
// back through Backend::free, so the same model code serves every backend.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"

namespace samebits {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static absl::StatusOr<DeviceBuffer> allocate(const Backend& backend, size_t bytes) {
    absl::StatusOr<void*> p = backend.alloc(bytes);
    if (!p.ok()) return p.status();
    DeviceBuffer b;
    b.backend_ = &backend;
    b.ptr_ = *p;
    b.bytes_ = bytes;
    return b;
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      backend_ = std::exchange(o.backend_, nullptr);
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  void reset() {
    if (ptr_ != nullptr) backend_->free(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  const Backend* backend_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Host memory for copies to and from the backend: page-locked where the backend has
// alloc_host (its async copies need it), ordinary memory elsewhere. Grow-only, contents not kept.
class HostStaging {
 public:
  HostStaging() = default;
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;
  ~HostStaging() { release(); }

  absl::Status reserve(const Backend& backend, size_t bytes) {
    if (bytes <= bytes_) return absl::OkStatus();
    release();
    bytes = bytes + bytes / 4;
    if (backend.alloc_host != nullptr) {
      absl::StatusOr<void*> p = backend.alloc_host(bytes);
      if (!p.ok()) return p.status();
      backend_ = &backend;
      ptr_ = *p;
    } else {
      plain_.resize(bytes);
      ptr_ = plain_.data();
    }
    bytes_ = bytes;
    return absl::OkStatus();
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void release() {
    if (backend_ != nullptr && ptr_ != nullptr) backend_->free_host(ptr_);
    backend_ = nullptr;
    ptr_ = nullptr;
    bytes_ = 0;
    plain_.clear();
    plain_.shrink_to_fit();
  }
  const Backend* backend_ = nullptr;  // set when ptr_ came from backend_->alloc_host
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  std::vector<unsigned char> plain_;
};

}  // namespace samebits
