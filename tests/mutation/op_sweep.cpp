// Every sweep builds its batches on the host, runs them through the backend's op with the invariant
// plan (what the model passes in invariant mode), and compares each target row's bytes with the
// row computed alone.
#include "tests/mutation/op_sweep.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/fixed_math.h"
#include "tests/support/sensitive_rows.h"
#include "tests/support/test_support.h"

namespace samebits::testing {
namespace {

constexpr int64_t kBatchRows[] = {2, 3, 8, 15, 16, 17, 33, 64, 130};

// Backend memory for one sweep, freed at the end.
class DeviceBuffers {
 public:
  explicit DeviceBuffers(const Backend& b) : b_(b) {}
  ~DeviceBuffers() {
    for (void* p : held_) b_.free(p);
  }
  template <typename T>
  T* copy_of(const std::vector<T>& host) {
    T* p = alloc<T>(host.size());
    if (p != nullptr && !b_.upload(p, host.data(), host.size() * sizeof(T)).ok()) return nullptr;
    return p;
  }
  template <typename T>
  T* alloc(size_t n) {
    auto p = b_.alloc(n * sizeof(T));
    if (!p.ok()) return nullptr;
    held_.push_back(*p);
    return static_cast<T*>(*p);
  }

 private:
  const Backend& b_;
  std::vector<void*> held_;
};

template <typename T>
std::vector<T> download(const Backend& b, const T* device, size_t n) {
  std::vector<T> host(n);
  if (!b.download(host.data(), device, n * sizeof(T)).ok()) host.clear();
  return host;
}

// Rows [0, rows) of `pool` starting at pool row `first` (cyclic), as one batch.
template <typename T>
std::vector<T> rows_of(const std::vector<T>& pool, int64_t pool_rows, int64_t first, int64_t rows, int64_t dim) {
  std::vector<T> out(size_t(rows * dim));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t p = (first + r) % pool_rows;
    std::memcpy(out.data() + r * dim, pool.data() + p * dim, size_t(dim) * sizeof(T));
  }
  return out;
}

std::string linear_one(const Backend& b, int64_t N, int64_t K) {
  constexpr int64_t kPool = 131;
  const std::vector<bf16> x = random_bf16(size_t(kPool * K), 4101, 2.f), w = random_bf16(size_t(N * K), 4102, 0.5f);
  // y of `rows` pool rows from `first`; empty on an error.
  auto run = [&](int64_t first, int64_t rows) -> std::vector<float> {
    DeviceBuffers mem(b);
    LinearArgs a;
    a.x = mem.copy_of(rows_of(x, kPool, first, rows, K)), a.w = mem.copy_of(w), a.M = rows, a.N = N, a.K = K;
    a.y_f32 = mem.alloc<float>(size_t(rows * N));
    ExecContext ctx;
    if (!a.x || !a.w || !a.y_f32 || !b.linear(ctx, a).ok() || !b.synchronize(ctx).ok()) return {};
    return download(b, a.y_f32, size_t(rows * N));
  };
  for (int64_t M : kBatchRows) {
    for (int64_t position : {int64_t(0), M - 1}) {
      const int64_t target = (M * 7 + position) % kPool;
      const std::vector<float> alone = run(target, 1), batch = run(target + kPool - position, M);
      if (alone.empty() || batch.empty()) return absl::StrCat("linear op: error at M=", M);
      if (std::memcmp(alone.data(), batch.data() + position * N, size_t(N) * sizeof(float)) != 0)
        return absl::StrCat("linear op (K=", K, "): row alone differs from row ", position, " of ", M);
    }
  }
  return "";
}

std::string rmsnorm_one(const Backend& b, int64_t dim, bool residual) {
  constexpr int64_t kPool = 64;
  const SensitiveRows pool = sensitive_rmsnorm_rows(kPool, dim, residual, 1e-6);
  const std::vector<bf16> weight = random_bf16(size_t(dim), 707, 1.f);
  // y (then the updated residual) of `rows` pool rows from `first`.
  auto run = [&](int64_t first, int64_t rows) -> std::vector<bf16> {
    DeviceBuffers mem(b);
    RmsNormArgs a;
    a.x = mem.copy_of(rows_of(pool.x, kPool, first, rows, dim));
    a.residual = residual ? mem.copy_of(rows_of(pool.residual, kPool, first, rows, dim)) : nullptr;
    a.weight = mem.copy_of(weight), a.rows = rows, a.dim = dim, a.y = mem.alloc<bf16>(size_t(rows * dim));
    ExecContext ctx;
    if (!a.x || (residual && !a.residual) || !a.weight || !a.y || !b.rmsnorm(ctx, a).ok() || !b.synchronize(ctx).ok())
      return {};
    std::vector<bf16> out = download(b, a.y, size_t(rows * dim));
    if (residual) {
      std::vector<bf16> h = download(b, a.residual, size_t(rows * dim));
      out.insert(out.end(), h.begin(), h.end());
    }
    return out;
  };
  std::vector<std::vector<bf16>> alone(kPool);
  for (int64_t r = 0; r < kPool; ++r) alone[size_t(r)] = run(r, 1);
  for (int64_t M : kBatchRows) {
    const int64_t first = (M * 13) % kPool;
    const std::vector<bf16> batch = run(first, M);
    if (batch.empty()) return absl::StrCat("rmsnorm op: error at rows=", M);
    for (int64_t i = 0; i < M; ++i) {
      const std::vector<bf16>& one = alone[size_t((first + i) % kPool)];
      bool same = !one.empty() && std::memcmp(one.data(), batch.data() + i * dim, size_t(dim) * 2) == 0;
      if (residual) same = same && std::memcmp(one.data() + dim, batch.data() + (M + i) * dim, size_t(dim) * 2) == 0;
      if (!same)
        return absl::StrCat("rmsnorm op (dim ", dim, residual ? ", residual" : "", "): row alone differs from row ",
                            i, " of ", M);
    }
  }
  return "";
}

}  // namespace

std::string linear_op_sweep(const Backend& b) { return linear_one(b, 512, 1024); }

std::string rmsnorm_op_sweep(const Backend& b) {
  std::string found = rmsnorm_one(b, 256, true);
  return found.empty() ? rmsnorm_one(b, 64, false) : found;
}

std::string sample_op_sweep(const Backend& b) {
  constexpr int64_t kVocab = 258, kMaxRows = 8;
  auto logits_of = [&](uint64_t seed) {
    std::vector<float> row(kVocab);
    for (int64_t v = 0; v < kVocab; ++v) row[size_t(v)] = float(4 * sampling_uniform(seed, uint64_t(v)) - 2);
    return row;
  };
  DeviceBuffers mem(b);
  float* logits_mem = mem.alloc<float>(size_t(kMaxRows * kVocab));
  int32_t* out_mem = mem.alloc<int32_t>(size_t(kMaxRows));
  if (logits_mem == nullptr || out_mem == nullptr) return "sample op: cannot allocate";
  auto draw = [&](int64_t rows, int64_t position, uint64_t step) -> int32_t {
    std::vector<float> logits;
    std::vector<SamplingRow> params(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      const uint64_t seed = r == position ? 77 : 1000 + uint64_t(r);
      const std::vector<float> row = logits_of(seed);
      logits.insert(logits.end(), row.begin(), row.end());
      params[size_t(r)] = SamplingRow{1.f, 0, 1.f, sampling_uniform(seed, step)};
    }
    ExecContext ctx;
    SampleArgs a;
    a.logits = logits_mem, a.rows = rows, a.vocab = kVocab, a.params = params.data(), a.out = out_mem;
    std::vector<int32_t> tokens(size_t(rows), -1);
    if (!b.upload(logits_mem, logits.data(), logits.size() * sizeof(float)).ok() || !b.sample(ctx, a).ok() ||
        !b.synchronize(ctx).ok() || !b.download(tokens.data(), out_mem, tokens.size() * sizeof(int32_t)).ok())
      return -2;
    return tokens[size_t(position)];
  };
  for (uint64_t step = 0; step < 8; ++step) {
    const int32_t alone = draw(1, 0, step);
    for (int64_t rows : {int64_t(3), kMaxRows}) {
      for (int64_t position : {int64_t(1), rows - 1}) {
        const int32_t inside = draw(rows, position, step);
        if (inside != alone)
          return absl::StrCat("sample op: step ", step, " alone drew ", alone, ", at row ", position, " of ", rows,
                              " drew ", inside);
      }
    }
  }
  return "";
}

std::string op_sweeps(const Backend& b) {
  for (auto* sweep : {linear_op_sweep, rmsnorm_op_sweep, sample_op_sweep}) {
    std::string found = sweep(b);
    if (!found.empty()) return found;
  }
  return "";
}

}  // namespace samebits::testing
