// Default-mode linear: cuBLASLt with its own heuristics (bf16 in, fp32 compute, bf16 or fp32 out).
// Row-major y[M,N] = x[M,K] w[N,K]^T is the column-major product y^T[N,M] = op(w)[N,K] x^T[K,M]
// with op = transpose: A = w (K x N, ld K, transposed), B = x (K x M, ld K), D = y (N x M, ld N).
// The algorithm is whatever cublasLtMatmulAlgoGetHeuristic returns first for the shape (with a
// 32 MiB workspace), cached per (M, N, K, output type, bias): that is the point of default mode.
#include <cublasLt.h>

#include <map>
#include <mutex>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cublaslt_matmul.h"
#include "kernels/cuda/cuda_common.h"

namespace samebits::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

absl::Status lt_status(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cublasLt ", what, ": ", cublasGetStatusName(s), ": ",
                                          cublasGetStatusString(s)));
}

#define SAMEBITS_LT_TRY(expr)                                                              \
  do {                                                                                     \
    if (absl::Status _st = lt_status((expr), #expr); !_st.ok()) return _st;                \
  } while (0)

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool bias_epilogue = false;
};

using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool>;  // M, N, K, fp32 out, bias epilogue

struct State {
  std::mutex mutex;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::map<Key, Plan> plans;
};

State& state() {
  static State* s = new State();
  return *s;
}

absl::Status make_plan(State& st, const Key& key, Plan* plan) {
  const auto [M, N, K, out_f32, bias_epilogue] = key;
  const cudaDataType_t out_type = out_f32 ? CUDA_R_32F : CUDA_R_16BF;
  SAMEBITS_LT_TRY(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  SAMEBITS_LT_TRY(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a));
  SAMEBITS_LT_TRY(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b));
  if (bias_epilogue) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    SAMEBITS_LT_TRY(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                   sizeof epilogue));
    plan->bias_epilogue = true;
  }
  SAMEBITS_LT_TRY(cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_16BF, uint64_t(K), uint64_t(N), K));
  SAMEBITS_LT_TRY(cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_16BF, uint64_t(K), uint64_t(M), K));
  SAMEBITS_LT_TRY(cublasLtMatrixLayoutCreate(&plan->d, out_type, uint64_t(N), uint64_t(M), N));
  cublasLtMatmulPreference_t pref = nullptr;
  SAMEBITS_LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = kWorkspaceBytes;
  SAMEBITS_LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                       sizeof ws));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(st.handle, plan->desc, plan->a, plan->b, plan->d,
                                                     plan->d, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  SAMEBITS_LT_TRY(hs);
  if (found == 0) {
    return absl::UnimplementedError(absl::StrCat("cublasLt: no algorithm for M=", M, " N=", N, " K=", K,
                                                 out_f32 ? " (fp32 out)" : " (bf16 out)"));
  }
  plan->algo = result.algo;
  return absl::OkStatus();
}

}  // namespace

absl::Status cublaslt_linear(const ExecContext& ctx, const LinearArgs& a) {
  State& st = state();
  const bool out_f32 = a.y_f32 != nullptr;
  const bool bias_epilogue = a.bias != nullptr && !out_f32;
  Plan plan;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    if (st.handle == nullptr) {
      SAMEBITS_LT_TRY(cublasLtCreate(&st.handle));
      SAMEBITS_CUDA_TRY(cudaMalloc(&st.workspace, kWorkspaceBytes));
    }
    const Key key{a.M, a.N, a.K, out_f32, bias_epilogue};
    auto it = st.plans.find(key);
    if (it == st.plans.end()) {
      Plan fresh;
      SAMEBITS_RETURN_IF_ERROR(make_plan(st, key, &fresh));
      it = st.plans.emplace(key, fresh).first;
    }
    plan = it->second;
  }
  if (plan.bias_epilogue) {
    const void* bias = a.bias;
    SAMEBITS_LT_TRY(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                   sizeof bias));
  }
  const float alpha = 1.0f, beta = 0.0f;
  void* out = out_f32 ? static_cast<void*>(a.y_f32) : static_cast<void*>(a.y);
  SAMEBITS_LT_TRY(cublasLtMatmul(st.handle, plan.desc, &alpha, a.w, plan.a, a.x, plan.b, &beta, out, plan.d,
                                 out, plan.d, &plan.algo, st.workspace, kWorkspaceBytes, stream_of(ctx)));
  if (a.bias != nullptr && out_f32) return add_bias_f32(ctx, a.y_f32, a.bias, a.M, a.N);
  return absl::OkStatus();
}

void cublaslt_release() {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mutex);
  for (auto& [key, plan] : st.plans) {
    cublasLtMatrixLayoutDestroy(plan.a);
    cublasLtMatrixLayoutDestroy(plan.b);
    cublasLtMatrixLayoutDestroy(plan.d);
    cublasLtMatmulDescDestroy(plan.desc);
  }
  st.plans.clear();
  if (st.workspace != nullptr) cudaFree(st.workspace);
  st.workspace = nullptr;
  if (st.handle != nullptr) cublasLtDestroy(st.handle);
  st.handle = nullptr;
}

std::string cublaslt_version() {
  const size_t v = cublasLtGetVersion();  // major * 10000 + minor * 100 + patch
  return absl::StrCat(v / 10000, ".", v / 100 % 100, ".", v % 100);
}

}  // namespace samebits::cuda
