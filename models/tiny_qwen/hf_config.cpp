// config.json of a dense Qwen3 / Qwen2 checkpoint -> ModelConfig. Defaults follow transformers'
// Qwen3Config / Qwen2Config where a field may be absent; anything the forward pass cannot honour
// (sliding windows, rope scaling, another activation) is refused rather than silently ignored.
#include "models/tiny_qwen/hf_config.h"

#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/input_file.h"
#include "nlohmann/json.hpp"

namespace samebits {
namespace {

using nlohmann::json;

#define SB_ASSIGN(lhs, expr)            \
  do {                                  \
    auto _v = (expr);                   \
    if (!_v.ok()) return _v.status();   \
    lhs = *_v;                          \
  } while (0)

absl::Status fail(const std::string& origin, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(printable(origin), ": ", printable(what, 300)));
}

// A positive integer field. `fallback` < 0 means the field is required.
absl::StatusOr<int> int_field(const json& j, const char* key, const std::string& origin, int fallback = -1,
                              bool allow_zero = false) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback >= 0) return fallback;
    return fail(origin, absl::StrCat(key, ": missing"));
  }
  if (!it->is_number_integer() || it->get<int64_t>() < (allow_zero ? 0 : 1) ||
      it->get<int64_t>() > (int64_t(1) << 30)) {
    return fail(origin, absl::StrCat(key, ": ", it->dump(), " is not a positive integer"));
  }
  return int(it->get<int64_t>());
}

absl::StatusOr<double> number_field(const json& j, const char* key, const std::string& origin, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number() || !(it->get<double>() > 0)) {
    return fail(origin, absl::StrCat(key, ": ", it->dump(), " is not a positive number"));
  }
  return it->get<double>();
}

absl::StatusOr<bool> bool_field(const json& j, const char* key, const std::string& origin, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return fail(origin, absl::StrCat(key, ": ", it->dump(), " is not true or false"));
  return it->get<bool>();
}

// bos/eos ids: an integer, null/absent (-1), or a list whose first entry is taken (eos lists).
absl::StatusOr<int> token_id_field(const json& j, const char* key, const std::string& origin) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return -1;
  const json& v = (it->is_array() && !it->empty()) ? (*it)[0] : *it;
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (int64_t(1) << 30)) {
    return fail(origin, absl::StrCat(key, ": ", it->dump(), " is not a token id"));
  }
  return int(v.get<int64_t>());
}

struct Arch {
  const char* architecture;
  const char* model_type;
  bool qwen3;
};
constexpr Arch kArchs[] = {{"Qwen3ForCausalLM", "qwen3", true}, {"Qwen2ForCausalLM", "qwen2", false}};

absl::StatusOr<Arch> find_arch(const json& j, const std::string& origin) {
  const Arch* by_arch = nullptr;
  const Arch* by_type = nullptr;
  if (auto it = j.find("architectures"); it != j.end() && !it->is_null()) {
    if (!it->is_array() || it->empty() || !(*it)[0].is_string()) {
      return fail(origin, absl::StrCat("architectures: ", it->dump(), " is not a list of names"));
    }
    const std::string name = (*it)[0].get<std::string>();
    for (const Arch& a : kArchs) {
      if (name == a.architecture) by_arch = &a;
    }
    if (!by_arch) {
      return fail(origin, absl::StrCat("unsupported architecture '", name,
                                       "' (supported: Qwen3ForCausalLM, Qwen2ForCausalLM)"));
    }
  }
  if (auto it = j.find("model_type"); it != j.end() && !it->is_null()) {
    const std::string type = it->is_string() ? it->get<std::string>() : it->dump();
    for (const Arch& a : kArchs) {
      if (type == a.model_type) by_type = &a;
    }
    if (!by_type) {
      return fail(origin, absl::StrCat("unsupported model_type '", type, "' (supported: qwen3, qwen2)"));
    }
  }
  if (!by_arch && !by_type) return fail(origin, "neither architectures nor model_type is given");
  if (by_arch && by_type && by_arch != by_type) {
    return fail(origin, absl::StrCat("architectures names ", by_arch->architecture, " but model_type is '",
                                     by_type->model_type, "'"));
  }
  return by_arch ? *by_arch : *by_type;
}

// rope_theta: top level (transformers 4) or inside rope_parameters (transformers 5). Only the
// default rope is supported.
absl::StatusOr<double> rope_theta(const json& j, const std::string& origin) {
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_object()) return fail(origin, absl::StrCat(key, ": ", it->dump(), " is not an object"));
    for (const char* type_key : {"rope_type", "type"}) {
      auto t = it->find(type_key);
      if (t != it->end() && !(t->is_string() && t->get<std::string>() == "default")) {
        return fail(origin, absl::StrCat(key, ".", type_key, ": ", t->dump(),
                                         " is not supported (only the default rope)"));
      }
    }
  }
  std::optional<double> nested, top;
  if (auto it = j.find("rope_parameters"); it != j.end() && it->is_object() && it->contains("rope_theta")) {
    SB_ASSIGN(nested, number_field(*it, "rope_theta", origin + ": rope_parameters", 0));
  }
  if (j.contains("rope_theta")) SB_ASSIGN(top, number_field(j, "rope_theta", origin, 0));
  if (nested && top && *nested != *top) {
    return fail(origin, absl::StrCat("rope_theta ", *top, " disagrees with rope_parameters.rope_theta ", *nested));
  }
  return top ? *top : nested ? *nested : 10000.0;  // transformers' default for both architectures
}

absl::StatusOr<std::string> dtype_field(const json& j, const std::string& origin) {
  std::string found;
  for (const char* key : {"torch_dtype", "dtype"}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    const std::string v = it->is_string() ? it->get<std::string>() : it->dump();
    if (v != "bfloat16" && v != "float16" && v != "float32") {
      return fail(origin, absl::StrCat(key, ": unsupported dtype '", v, "' (bfloat16, float16, float32)"));
    }
    if (!found.empty() && found != v) {
      return fail(origin, absl::StrCat("torch_dtype '", found, "' disagrees with dtype '", v, "'"));
    }
    found = v;
  }
  return found;
}

}  // namespace

absl::StatusOr<HfConfig> parse_hf_config(std::string_view json_text, const std::string& origin) {
  json j;
  if (absl::Status s = parse_json_text(json_text, origin, &j); !s.ok()) return s;
  if (!j.is_object()) return fail(origin, "malformed config: the top level is not a JSON object");

  HfConfig out;
  Arch arch;
  SB_ASSIGN(arch, find_arch(j, origin));
  out.architecture = arch.architecture;
  SB_ASSIGN(out.torch_dtype, dtype_field(j, origin));

  if (auto it = j.find("hidden_act"); it != j.end() && !it->is_null() && *it != "silu") {
    return fail(origin, absl::StrCat("hidden_act: ", it->dump(), " is not supported (only silu)"));
  }
  bool sliding = false;
  SB_ASSIGN(sliding, bool_field(j, "use_sliding_window", origin, false));
  if (sliding) return fail(origin, "use_sliding_window: true is not supported");
  if (auto it = j.find("layer_types"); it != j.end() && it->is_array()) {
    for (const json& t : *it) {
      if (t != "full_attention") return fail(origin, absl::StrCat("layer_types: ", t.dump(), " is not supported"));
    }
  }

  ModelConfig& c = out.model;
  c.name = arch.model_type;
  SB_ASSIGN(c.vocab_size, int_field(j, "vocab_size", origin));
  SB_ASSIGN(c.hidden_size, int_field(j, "hidden_size", origin));
  SB_ASSIGN(c.intermediate_size, int_field(j, "intermediate_size", origin));
  SB_ASSIGN(c.num_layers, int_field(j, "num_hidden_layers", origin));
  SB_ASSIGN(c.num_heads, int_field(j, "num_attention_heads", origin));
  SB_ASSIGN(c.num_kv_heads, int_field(j, "num_key_value_heads", origin, c.num_heads));
  if (arch.qwen3) {
    SB_ASSIGN(c.head_dim, int_field(j, "head_dim", origin));
  } else {
    if (c.hidden_size % c.num_heads != 0) {
      return fail(origin, absl::StrCat("hidden_size ", c.hidden_size, " is not a multiple of num_attention_heads ",
                                       c.num_heads));
    }
    const int derived = c.hidden_size / c.num_heads;  // Qwen2 has no head_dim of its own
    SB_ASSIGN(c.head_dim, int_field(j, "head_dim", origin, derived));
    if (c.head_dim != derived) {
      return fail(origin, absl::StrCat("head_dim ", c.head_dim, " differs from hidden_size / num_attention_heads = ",
                                       derived, ", which Qwen2 uses"));
    }
  }
  double eps = 0;
  SB_ASSIGN(eps, number_field(j, "rms_norm_eps", origin, 1e-6));
  c.rms_norm_eps = float(eps);
  SB_ASSIGN(c.rope_theta, rope_theta(j, origin));
  SB_ASSIGN(c.tie_word_embeddings, bool_field(j, "tie_word_embeddings", origin, false));
  SB_ASSIGN(c.max_position_embeddings, int_field(j, "max_position_embeddings", origin, 32768));
  // Qwen2's q/k/v projections always carry biases; Qwen3's only when attention_bias says so.
  if (arch.qwen3) {
    SB_ASSIGN(c.attention_bias, bool_field(j, "attention_bias", origin, false));
  } else {
    c.attention_bias = true;
  }
  c.qk_norm = arch.qwen3;
  SB_ASSIGN(c.bos_token_id, token_id_field(j, "bos_token_id", origin));
  SB_ASSIGN(c.eos_token_id, token_id_field(j, "eos_token_id", origin));
  for (int id : {c.bos_token_id, c.eos_token_id}) {
    if (id >= c.vocab_size) {
      return fail(origin, absl::StrCat("token id ", id, " is outside the vocabulary (vocab_size ", c.vocab_size, ")"));
    }
  }
  if (absl::Status s = validate_config(c); !s.ok()) return fail(origin, std::string(s.message()));
  return out;
}

absl::StatusOr<HfConfig> load_hf_config(const std::string& path) {
  std::string text;
  if (absl::Status s = read_input_file(path, kMaxTextInputBytes, &text); !s.ok()) return s;
  return parse_hf_config(text, path);
}

}  // namespace samebits
