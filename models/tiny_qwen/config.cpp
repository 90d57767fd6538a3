// Built-in model configurations and the checks every op relies on.
#include "models/tiny_qwen/config.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace samebits {
namespace {

// Byte-level tiny Qwen3: small enough that 1000 completions of ~128 tokens run in minutes on two
// CPU cores. Ids 0..255 are bytes, 256 is BOS, 257 is EOS.
ModelConfig tiny_config() {
  ModelConfig c;
  c.name = "tiny";
  c.vocab_size = 258;
  c.hidden_size = 256;
  c.intermediate_size = 768;
  c.num_layers = 4;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  c.rms_norm_eps = 1e-6f;
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = true;
  c.attention_bias = false;
  c.qk_norm = true;
  c.max_position_embeddings = 1024;
  c.bos_token_id = 256;
  c.eos_token_id = 257;
  return c;
}

// The tiny shape with Qwen2's attention: q/k/v biases, no per-head q/k norm.
ModelConfig tiny_qwen2_config() {
  ModelConfig c = tiny_config();
  c.name = "tiny-qwen2";
  c.attention_bias = true;
  c.qk_norm = false;
  return c;
}

// Shapes of Qwen/Qwen3-0.6B (config.json of the Hugging Face release).
ModelConfig qwen3_0_6b_config() {
  ModelConfig c;
  c.name = "qwen3-0.6b";
  c.vocab_size = 151936;
  c.hidden_size = 1024;
  c.intermediate_size = 3072;
  c.num_layers = 28;
  c.num_heads = 16;
  c.num_kv_heads = 8;
  c.head_dim = 128;
  c.rms_norm_eps = 1e-6f;
  c.rope_theta = 1000000.0;
  c.tie_word_embeddings = true;
  c.attention_bias = false;
  c.qk_norm = true;
  c.max_position_embeddings = 40960;
  c.bos_token_id = 151643;
  c.eos_token_id = 151645;
  return c;
}

// Shapes of Qwen/Qwen3-8B.
ModelConfig qwen3_8b_config() {
  ModelConfig c = qwen3_0_6b_config();
  c.name = "qwen3-8b";
  c.hidden_size = 4096;
  c.intermediate_size = 12288;
  c.num_layers = 36;
  c.num_heads = 32;
  c.num_kv_heads = 8;
  c.head_dim = 128;
  c.tie_word_embeddings = false;
  return c;
}

absl::Status positive(const char* field, int64_t value) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("config.", field, ": ", value, " is not a positive integer"));
}

absl::Status token_id(const char* field, int id, int vocab) {
  if (id == -1 || (id >= 0 && id < vocab)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("config.", field, ": ", id, " is outside the vocabulary [0, ", vocab, ") (use -1 for none)"));
}

}  // namespace

std::vector<std::string> builtin_config_names() { return {"tiny", "tiny-qwen2", "qwen3-0.6b", "qwen3-8b"}; }

absl::StatusOr<ModelConfig> builtin_config(const std::string& name) {
  if (name == "tiny") return tiny_config();
  if (name == "tiny-qwen2") return tiny_qwen2_config();
  if (name == "qwen3-0.6b") return qwen3_0_6b_config();
  if (name == "qwen3-8b") return qwen3_8b_config();
  return absl::NotFoundError(absl::StrCat("config: unknown builtin configuration '", name, "' (known: ",
                                          absl::StrJoin(builtin_config_names(), ", "), ")"));
}

absl::Status validate_config(const ModelConfig& c) {
  for (auto [field, value] : {std::pair<const char*, int64_t>{"vocab_size", c.vocab_size},
                              {"hidden_size", c.hidden_size},
                              {"intermediate_size", c.intermediate_size},
                              {"num_layers", c.num_layers},
                              {"num_heads", c.num_heads},
                              {"num_kv_heads", c.num_kv_heads},
                              {"head_dim", c.head_dim},
                              {"max_position_embeddings", c.max_position_embeddings}}) {
    if (auto s = positive(field, value); !s.ok()) return s;
  }
  if (c.num_heads % c.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("config.num_heads: ", c.num_heads,
                                                   " is not a multiple of num_kv_heads ", c.num_kv_heads));
  }
  if (c.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.head_dim: ", c.head_dim, " is odd (rope rotates pairs of halves)"));
  }
  if (!(c.rms_norm_eps > 0.f) || !std::isfinite(c.rms_norm_eps)) {
    return absl::InvalidArgumentError(absl::StrCat("config.rms_norm_eps: ", c.rms_norm_eps, " is not a positive finite number"));
  }
  if (!(c.rope_theta > 1.0) || !std::isfinite(c.rope_theta)) {
    return absl::InvalidArgumentError(absl::StrCat("config.rope_theta: ", c.rope_theta, " is not a finite number above 1"));
  }
  if (auto s = token_id("bos_token_id", c.bos_token_id, c.vocab_size); !s.ok()) return s;
  if (auto s = token_id("eos_token_id", c.eos_token_id, c.vocab_size); !s.ok()) return s;
  return absl::OkStatus();
}

}  // namespace samebits
