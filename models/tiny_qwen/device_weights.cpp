#include "models/tiny_qwen/device_weights.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/tiny_qwen/safetensors.h"

namespace samebits {
namespace {

// gate [F, K] and up [F, K] into one [2F, K] tensor interleaved by gate_up_weight_row, in backend
// memory, by the embedding op used as a row gather over pieces of kGateUpGroup rows: first both
// into a [gate; up] staging tensor, then its pieces in interleaved order. Row copies: no arithmetic.
class GateUpInterleaver {
 public:
  static absl::StatusOr<GateUpInterleaver> make(const Backend& backend, int64_t F, int64_t K) {
    GateUpInterleaver g;
    g.backend_ = &backend;
    g.pieces_ = F / kGateUpGroup;
    g.piece_ = kGateUpGroup * K;
    std::vector<int32_t> ids;
    for (int64_t j = 0; j < g.pieces_; ++j) ids.push_back(int32_t(j));  // the copies
    for (int64_t j = 0; j < 2 * g.pieces_; ++j) {
      ids.push_back(int32_t(j % 2 == 0 ? j / 2 : g.pieces_ + j / 2));  // interleaving
    }
    absl::StatusOr<DeviceBuffer> d_ids = DeviceBuffer::allocate(backend, ids.size() * sizeof(int32_t));
    if (!d_ids.ok()) return d_ids.status();
    g.ids_ = *std::move(d_ids);
    if (absl::Status s = backend.upload(g.ids_.as<void>(), ids.data(), g.ids_.bytes()); !s.ok()) return s;
    absl::StatusOr<DeviceBuffer> staging = DeviceBuffer::allocate(backend, size_t(2 * F * K) * sizeof(bf16));
    if (!staging.ok()) return staging.status();
    g.staging_ = *std::move(staging);
    return g;
  }

  absl::StatusOr<DeviceBuffer> interleave(const bf16* gate, const bf16* up) {
    absl::StatusOr<DeviceBuffer> out = DeviceBuffer::allocate(*backend_, staging_.bytes());
    if (!out.ok()) return out.status();
    const ExecContext ctx;
    EmbeddingArgs a;
    a.ids = ids_.as<int32_t>(), a.T = pieces_, a.vocab = pieces_, a.dim = piece_;
    a.table = gate, a.y = staging_.as<bf16>();
    if (absl::Status s = backend_->embedding(ctx, a); !s.ok()) return s;
    a.table = up, a.y = staging_.as<bf16>() + pieces_ * piece_;
    if (absl::Status s = backend_->embedding(ctx, a); !s.ok()) return s;
    a.ids = ids_.as<int32_t>() + pieces_, a.T = a.vocab = 2 * pieces_;
    a.table = staging_.as<bf16>(), a.y = out->as<bf16>();
    if (absl::Status s = backend_->embedding(ctx, a); !s.ok()) return s;
    if (absl::Status s = backend_->synchronize(ctx); !s.ok()) return s;  // staging is reused
    return out;
  }

 private:
  const Backend* backend_ = nullptr;
  int64_t pieces_ = 0, piece_ = 0;
  DeviceBuffer ids_, staging_;
};

// Replaces each layer's gate and up tensors by their interleaved gate_up tensor.
absl::Status build_gate_up(const Backend& backend, const ModelConfig& config,
                           const std::vector<std::pair<const bf16*, const bf16*>>& gate_and_up, DeviceWeights* out) {
  if (config.intermediate_size % kGateUpGroup != 0) {
    return absl::InvalidArgumentError(absl::StrCat("weights: intermediate_size ", config.intermediate_size,
                                                   " is not a multiple of ", kGateUpGroup));
  }
  absl::StatusOr<GateUpInterleaver> interleaver =
      GateUpInterleaver::make(backend, config.intermediate_size, config.hidden_size);
  if (!interleaver.ok()) return interleaver.status();
  for (size_t l = 0; l < out->layers.size(); ++l) {
    const bf16* gate = gate_and_up[l].first;
    const bf16* up = gate_and_up[l].second;
    absl::StatusOr<DeviceBuffer> gate_up = interleaver->interleave(gate, up);
    if (!gate_up.ok()) return gate_up.status();
    out->layers[l].gate_up = gate_up->as<bf16>();
    std::erase_if(out->storage, [&](const DeviceBuffer& b) { return b.as<bf16>() == gate || b.as<bf16>() == up; });
    out->storage.push_back(*std::move(gate_up));
  }
  return absl::OkStatus();
}

}  // namespace

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
  std::vector<std::pair<const bf16*, const bf16*>> gate_and_up;
  for (int i = 0; i < config.num_layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i, ".");
    LayerWeights l;
    l.input_norm = get(p + "input_layernorm.weight");
    l.post_attention_norm = get(p + "post_attention_layernorm.weight");
    l.qkv_proj = get(p + "self_attn.q_proj.weight");  // k_proj and v_proj follow it (placed above)
    l.qkv_bias = get(p + "self_attn.q_proj.bias");
    l.o_proj = get(p + "self_attn.o_proj.weight");
    l.q_norm = get(p + "self_attn.q_norm.weight");
    l.k_norm = get(p + "self_attn.k_norm.weight");
    l.down_proj = get(p + "mlp.down_proj.weight");
    gate_and_up.emplace_back(get(p + "mlp.gate_proj.weight"), get(p + "mlp.up_proj.weight"));
    out.layers.push_back(l);
  }
  if (absl::Status s = build_gate_up(backend, config, gate_and_up, &out); !s.ok()) return s;
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
