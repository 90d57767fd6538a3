// Loads a Hugging Face checkpoint directory: config.json, then every tensor that the
// configuration requires, checked by name and shape before anything is converted.
#include "models/tiny_qwen/checkpoint.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/tiny_qwen/hf_config.h"
#include "models/tiny_qwen/safetensors.h"

namespace samebits {
namespace {

std::string shape_str(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

}  // namespace

absl::StatusOr<MappedCheckpoint> open_hf_checkpoint(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return absl::NotFoundError(absl::StrCat(dir, ": not a checkpoint directory"));
  auto hf = load_hf_config((fs::path(dir) / "config.json").string());
  if (!hf.ok()) return hf.status();
  auto set = SafetensorsSet::open_dir(dir);
  if (!set.ok()) return set.status();

  const bool sharded = set->num_files() > 1 || fs::exists(fs::path(dir) / "model.safetensors.index.json", ec);
  const std::string listing =
      (fs::path(dir) / (sharded ? "model.safetensors.index.json" : "model.safetensors")).string();
  const ModelConfig& config = hf->model;
  const auto expected = expected_tensor_shapes(config);

  // Missing tensors: name the first, count the rest.
  std::vector<std::string> missing;
  for (const auto& [name, shape] : expected) {
    if (!set->index().count(name)) missing.push_back(name);
  }
  if (!missing.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        listing, ": missing tensor '", missing[0], "'",
        missing.size() > 1 ? absl::StrCat(" (and ", missing.size() - 1, " more)") : std::string()));
  }
  for (const auto& [name, file] : set->index()) {
    const StTensorInfo& info = file->tensors().at(name);
    auto want = expected.find(name);
    if (want == expected.end()) {
      // A tied checkpoint may still carry lm_head.weight (a copy of the embedding): dropped.
      const bool tied_head = name == "lm_head.weight" && config.tie_word_embeddings &&
                             info.shape == std::vector<int64_t>{config.vocab_size, config.hidden_size};
      if (tied_head) continue;
      return absl::InvalidArgumentError(absl::StrCat(file->path(), ": unexpected tensor '", name, "' (",
                                                     config.name, " with this config.json has no such tensor)"));
    }
    if (info.shape != want->second) {
      return absl::InvalidArgumentError(absl::StrCat(file->path(), ": tensor '", name, "' has shape ",
                                                     shape_str(info.shape), ", expected ", shape_str(want->second)));
    }
  }
  MappedCheckpoint out;
  out.config = config;
  out.architecture = hf->architecture;
  out.torch_dtype = hf->torch_dtype;
  out.num_files = int(set->num_files());
  out.tensors = std::make_shared<const SafetensorsSet>(*std::move(set));
  return out;
}

uint64_t mapped_weights_digest(const MappedCheckpoint& checkpoint) {
  constexpr uint64_t kChunk = uint64_t(1) << 22;  // values per chunk (8 MiB)
  std::vector<bf16> chunk;
  WeightsDigest digest;
  for (const auto& [name, shape] : expected_tensor_shapes(checkpoint.config)) {  // name order
    const SafetensorsFile* file = checkpoint.tensors->index().at(name);
    const StTensorInfo& info = *file->find(name);
    digest.begin_tensor(name, shape);
    const uint64_t count = (info.end - info.begin) / st_dtype_size(info.dtype);
    if (info.dtype == StDtype::kBF16) {  // the stored bytes are the values
      digest.add_bytes(file->mapped_bytes(name), count * sizeof(bf16));
      continue;
    }
    for (uint64_t at = 0; at < count; at += kChunk) {
      const uint64_t n = std::min(kChunk, count - at);
      chunk.resize(n);
      (void)file->read_bf16_range(name, at, n, chunk.data());  // in range by construction
      digest.add_values(chunk.data(), n);
    }
  }
  return digest.finish();
}

absl::StatusOr<HfCheckpoint> load_hf_checkpoint(const std::string& dir) {
  auto mapped = open_hf_checkpoint(dir);
  if (!mapped.ok()) return mapped.status();
  HfCheckpoint out;
  for (const auto& [name, shape] : expected_tensor_shapes(mapped->config)) {
    auto t = mapped->tensors->read_bf16(name);
    if (!t.ok()) return t.status();
    out.weights.tensors[name] = std::move(*t);
  }
  out.config = mapped->config;
  out.architecture = mapped->architecture;
  out.torch_dtype = mapped->torch_dtype;
  out.num_files = mapped->num_files;
  return out;
}

}  // namespace samebits
