// Where a run's model comes from. One spec string names it:
//   "builtin"                     the trained tiny Qwen3 checkpoint shipped in models/tiny_qwen/checkpoint/
//   "synthetic:<config>[:<seed>]" builtin_config(<config>) with seeded synthetic_weights (seed 0 if absent)
//   anything else                 a directory holding a Hugging Face checkpoint (config.json +
//                                 model.safetensors or model.safetensors.index.json; tokenizer.json
//                                 and tokenizer_config.json beside them when the model has its own
//                                 tokenizer, as Qwen2 and Qwen3 checkpoints do)
// The prompt format of the builtin checkpoint is documented in models/tiny_qwen/README.md:
// BOS, then the bytes of the question followed by one '\n' (kTinyQwenFeynmanPrompt).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "models/tiny_qwen/config.h"
#include "models/tiny_qwen/model.h"
#include "models/tiny_qwen/text_tokenizer.h"
#include "models/tiny_qwen/weights.h"

namespace samebits {

class SafetensorsSet;

inline constexpr char kBuiltinModelSpec[] = "builtin";
// The Feynman question exactly as the builtin checkpoint was trained to see it (after BOS).
inline constexpr char kTinyQwenFeynmanPrompt[] = "Tell me about Richard Feynman.\n";

struct ModelSource {
  ModelConfig config;
  HostWeights weights;          // empty for synthetic weights and mapped checkpoints
  // A checkpoint's tensors, mapped (open_hf_checkpoint): uploaded from the mapping when the model
  // is built, never read into host memory as a whole.
  std::shared_ptr<const SafetensorsSet> checkpoint;
  std::string description;      // one line for reports: "builtin tiny Qwen3 (models/tiny_qwen/checkpoint)"
  uint64_t weights_digest = 0;  // weights.digest(), or synthetic_weights_digest(config, seed)
  bool synthetic = false;       // synthetic_weights(config, synthetic_seed)
  uint64_t synthetic_seed = 0;
  // The checkpoint's tokenizer.json when it has one (BpeTokenizer), else bytes (ByteTokenizer).
  std::shared_ptr<const TextTokenizer> tokenizer;
};

// The model of a source in backend memory (Model::create or Model::create_synthetic).
absl::StatusOr<std::unique_ptr<Model>> build_model(const ModelSource& source, const Backend& backend, KvCacheShape kv);

// Errors name the spec and what is wrong with it (unknown config, bad seed, unreadable checkpoint).
absl::StatusOr<ModelSource> resolve_model(const std::string& spec);

// Absolute path of the shipped checkpoint directory (compile-time SAMEBITS_TINY_QWEN_DIR/checkpoint).
std::string builtin_checkpoint_dir();

}  // namespace samebits
