// Checks a ForwardBatch on the host before any op runs, so a malformed batch is one clear error
// naming the field and index rather than a kernel failure halfway through the layers.
#pragma once
#include "absl/status/status.h"
#include "models/tiny_qwen/model.h"

namespace samebits {

absl::Status check_forward_batch(const ForwardBatch& batch, const ModelConfig& config, KvCacheShape kv);
// fed_tokens / fed_from against the batch and the previous step's sampled rows (-1: no step that
// sampled came right before, so nothing may be fed).
absl::Status check_fed_tokens(const ForwardBatch& batch, int64_t previous_sampled_rows);

}  // namespace samebits
