// Loads a Hugging Face checkpoint directory: config.json, then every tensor that the
// configuration requires, checked by name and shape before anything is converted.
#include "models/tiny_qwen/checkpoint.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/tiny_qwen/hf_config.h"
#include "models/tiny_qwen/safetensors.h"

namespace samebits {
namespace {

std::string shape_str(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

}  // namespace

absl::StatusOr<HfCheckpoint> load_hf_checkpoint(const std::string& dir) {
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
  HfCheckpoint out;
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
  for (const auto& [name, shape] : expected) {
    auto t = set->read_bf16(name);
    if (!t.ok()) return t.status();
    out.weights.tensors[name] = std::move(*t);
  }
  out.config = config;
  out.architecture = hf->architecture;
  out.torch_dtype = hf->torch_dtype;
  out.num_files = int(set->num_files());
  return out;
}

}  // namespace samebits
