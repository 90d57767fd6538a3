// Checks a ForwardBatch on the host before any op runs, so a malformed batch is one clear error
// naming the field and index rather than a kernel failure halfway through the layers.
#pragma once
#include "absl/status/status.h"
#include "models/tiny_qwen/model.h"

namespace samebits {

absl::Status check_forward_batch(const ForwardBatch& batch, const ModelConfig& config, KvCacheShape kv);

}  // namespace samebits
