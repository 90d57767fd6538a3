#include "models/tiny_qwen/device_weights.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/tiny_qwen/safetensors.h"

namespace samebits {

absl::StatusOr<DeviceWeights> build_device_weights(const Backend& backend, const ModelConfig& config,
                                                   const TensorWriter& write) {
  DeviceWeights out;
  const std::map<std::string, std::vector<int64_t>> shapes = expected_tensor_shapes(config);
  auto numel_of = [&](const std::string& name) {
    int64_t n = 1;
    for (int64_t d : shapes.at(name)) n *= d;
    return n;
  };
  // Where each q/k/v tensor goes inside its layer's shared allocation.
  std::map<std::string, bf16*> placed;
  for (int i = 0; i < config.num_layers; ++i) {
    for (const char* suffix : {"weight", "bias"}) {
      std::vector<std::string> names;
      for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
        names.push_back(absl::StrCat("model.layers.", i, ".self_attn.", proj, ".", suffix));
      }
      if (!shapes.contains(names[0])) continue;
      int64_t total = 0;
      for (const std::string& n : names) total += numel_of(n);
      absl::StatusOr<DeviceBuffer> buf = DeviceBuffer::allocate(backend, size_t(total) * sizeof(bf16));
      if (!buf.ok()) return buf.status();
      bf16* at = buf->as<bf16>();
      for (const std::string& n : names) placed[n] = at, at += numel_of(n);
      out.storage.push_back(*std::move(buf));
    }
  }
  std::map<std::string, const bf16*> uploaded;
  for (const auto& [name, shape] : shapes) {
    const int64_t numel = numel_of(name);
    bf16* dst = nullptr;
    if (auto it = placed.find(name); it != placed.end()) {
      dst = it->second;
    } else {
      absl::StatusOr<DeviceBuffer> buf = DeviceBuffer::allocate(backend, size_t(numel) * sizeof(bf16));
      if (!buf.ok()) return buf.status();
      dst = buf->as<bf16>();
      out.storage.push_back(*std::move(buf));
    }
    if (absl::Status s = write(name, shape, dst, numel); !s.ok()) return s;
    uploaded[name] = dst;
  }
  auto get = [&](const std::string& name) -> const bf16* {
    auto it = uploaded.find(name);
    return it == uploaded.end() ? nullptr : it->second;
  };
  out.embed_tokens = get("model.embed_tokens.weight");
  out.final_norm = get("model.norm.weight");
  out.lm_head = config.tie_word_embeddings ? out.embed_tokens : get("lm_head.weight");
  for (int i = 0; i < config.num_layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i, ".");
    LayerWeights l;
    l.input_norm = get(p + "input_layernorm.weight");
    l.post_attention_norm = get(p + "post_attention_layernorm.weight");
    l.q_proj = get(p + "self_attn.q_proj.weight");
    l.k_proj = get(p + "self_attn.k_proj.weight");
    l.v_proj = get(p + "self_attn.v_proj.weight");
    l.o_proj = get(p + "self_attn.o_proj.weight");
    l.q_bias = get(p + "self_attn.q_proj.bias");
    l.k_bias = get(p + "self_attn.k_proj.bias");
    l.v_bias = get(p + "self_attn.v_proj.bias");
    l.q_norm = get(p + "self_attn.q_norm.weight");
    l.k_norm = get(p + "self_attn.k_norm.weight");
    l.qkv_proj = l.q_proj;
    l.qkv_bias = l.q_bias;
    l.gate_proj = get(p + "mlp.gate_proj.weight");
    l.up_proj = get(p + "mlp.up_proj.weight");
    l.down_proj = get(p + "mlp.down_proj.weight");
    out.layers.push_back(l);
  }
  return out;
}

absl::StatusOr<DeviceWeights> upload_weights(const Backend& backend, const ModelConfig& config,
                                             const HostWeights& weights) {
  return build_device_weights(backend, config, [&](const std::string& name, const std::vector<int64_t>& shape,
                                                   bf16* dst, int64_t numel) -> absl::Status {
    auto it = weights.tensors.find(name);
    if (it == weights.tensors.end()) return absl::NotFoundError(absl::StrCat("weights: tensor ", name, " is missing"));
    const HostTensor& t = it->second;
    if (t.shape != shape || int64_t(t.data.size()) != numel) {
      return absl::InvalidArgumentError(absl::StrCat("weights: tensor ", name, " has shape [",
                                                     absl::StrJoin(t.shape, ","), "] with ", t.data.size(),
                                                     " values, expected [", absl::StrJoin(shape, ","), "]"));
    }
    return backend.upload(dst, t.data.data(), t.data.size() * sizeof(bf16));
  });
}

absl::StatusOr<DeviceWeights> upload_mapped_weights(const Backend& backend, const ModelConfig& config,
                                                    const SafetensorsSet& tensors, uint64_t* bytes) {
  constexpr uint64_t kChunk = uint64_t(1) << 22;  // values per converted chunk (8 MiB)
  std::vector<bf16> chunk;
  *bytes = 0;
  auto upload = backend.upload_bulk != nullptr ? backend.upload_bulk : backend.upload;
  return build_device_weights(backend, config, [&](const std::string& name, const std::vector<int64_t>&, bf16* dst,
                                                   int64_t numel) -> absl::Status {
    auto it = tensors.index().find(name);
    if (it == tensors.index().end()) return absl::NotFoundError(absl::StrCat("weights: tensor ", name, " is missing"));
    const SafetensorsFile& file = *it->second;
    const StTensorInfo& info = *file.find(name);
    if ((info.end - info.begin) / st_dtype_size(info.dtype) != uint64_t(numel)) {
      return absl::InvalidArgumentError(absl::StrCat(file.path(), ": tensor ", name, " does not hold ", numel, " values"));
    }
    *bytes += uint64_t(numel) * sizeof(bf16);
    if (info.dtype == StDtype::kBF16) return upload(dst, file.mapped_bytes(name), size_t(numel) * sizeof(bf16));
    for (uint64_t at = 0; at < uint64_t(numel); at += kChunk) {
      const uint64_t n = std::min(kChunk, uint64_t(numel) - at);
      chunk.resize(n);
      if (absl::Status s = file.read_bf16_range(name, at, n, chunk.data()); !s.ok()) return s;
      if (absl::Status s = backend.upload(dst + at, chunk.data(), n * sizeof(bf16)); !s.ok()) return s;
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<DeviceWeights> upload_synthetic_weights(const Backend& backend, const ModelConfig& config,
                                                       uint64_t seed, uint64_t* digest) {
  constexpr int64_t kChunk = int64_t(1) << 22;  // values per host chunk (8 MiB)
  std::vector<bf16> chunk;
  auto result = build_device_weights(backend, config, [&](const std::string& name, const std::vector<int64_t>&,
                                                          bf16* dst, int64_t numel) -> absl::Status {
    const uint64_t key = synthetic_tensor_key(seed, name);
    const SyntheticFill fill = synthetic_fill(config, name);
    // A backend that generates in its own memory needs nothing from the host.
    if (backend.fill_synthetic != nullptr) return backend.fill_synthetic(dst, numel, key, fill.scale, fill.offset);
    for (int64_t begin = 0; begin < numel; begin += kChunk) {
      const int64_t n = std::min(kChunk, numel - begin);
      chunk.resize(size_t(n));
      synthetic_fill_range(key, fill, begin, n, chunk.data());
      if (absl::Status s = backend.upload(dst + begin, chunk.data(), size_t(n) * sizeof(bf16)); !s.ok()) return s;
    }
    return absl::OkStatus();
  });
  *digest = synthetic_weights_digest(config, seed);
  return result;
}

}  // namespace samebits
