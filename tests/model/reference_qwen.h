// A naive host reference of the Qwen3 forward (HF Qwen3ForCausalLM) for one sequence: plain loops,
// double accumulation, bf16 rounding where HF stores a bf16 tensor. Only for tests: it checks the
// wiring of models/tiny_qwen/model.cpp (op order, GQA, rope layout, q/k norm, residuals, tied head).
#pragma once
#include <cstdint>
#include <vector>

#include "models/tiny_qwen/config.h"
#include "models/tiny_qwen/weights.h"

namespace samebits::testing {

// Logits [tokens.size(), vocab] of every position, fp32.
std::vector<float> reference_logits(const ModelConfig& config, const HostWeights& weights,
                                    const std::vector<int32_t>& tokens);

}  // namespace samebits::testing
