// An optional look at every op's output during Model::forward, for divergence localisation
// (`samebits explain`). With no observer set the forward pass only tests one empty std::function
// per op; with one, the model synchronises the backend after the op and hands over the output
// (still in backend memory) with the plan the op executed. Observation never changes the bits.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "kernels/plan.h"

namespace samebits {

// The ops of one layer in execution order, then the model's final ops (observed at
// layer = num_layers). q/k/v, q/k norm and rope are per token rows of num_heads * head_dim values.
enum class ModelOp : uint8_t {
  kEmbedding,    // layer -1
  kResidualIn,   // the residual stream entering the layer (layer >= 1, and the final layer slot)
  kInputNorm,
  kQProj,
  kKProj,
  kVProj,
  kQNorm,
  kKNorm,
  kRopeQ,
  kRopeK,
  kAttention,
  kOProj,
  kResidual,     // residual stream after the attention block is added
  kPostNorm,
  kGateUpSilu,   // silu(gate) * up, [rows, intermediate_size]: gate and up are one op
  kDownProj,
  kFinalNorm,    // layer = num_layers
  kLogits,       // layer = num_layers; one row per logit row of the batch, fp32
};
const char* model_op_name(ModelOp op);

struct OpOutput {
  int layer = 0;  // -1 embedding, num_layers final norm and logits
  ModelOp op = ModelOp::kEmbedding;
  const void* data = nullptr;  // backend memory, rows x cols, row-major
  int64_t rows = 0;            // token rows of the batch (logit rows for kLogits)
  int64_t cols = 0;
  bool fp32 = false;           // else bf16
  // The reduction plan the op executed (kernels/plan.h describe()), with the shape it was chosen
  // for; empty for ops without a shape-dependent decision.
  std::string plan;
  const AttentionPlan* attention_plan = nullptr;  // kAttention: the plan, to count a query's splits
};

// Called in op order during forward(), after the op's output is complete in backend memory.
using OpObserver = std::function<void(const OpOutput&)>;

}  // namespace samebits
