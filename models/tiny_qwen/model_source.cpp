// resolve_model: "builtin", "synthetic:<config>[:<seed>]" or a checkpoint directory.
#include "models/tiny_qwen/model_source.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "models/tiny_qwen/bpe_tokenizer.h"
#include "models/tiny_qwen/checkpoint.h"
#include "models/tiny_qwen/safetensors.h"
#include "models/tiny_qwen/tokenizer.h"

namespace samebits {

std::string builtin_checkpoint_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Binaries copied to another machine find the checkpoint through the environment or, run from
  // a repository root, through the relative path; the build tree's absolute path comes first.
  if (const char* env = std::getenv("SAMEBITS_TINY_QWEN_DIR"); env != nullptr && *env != '\0') {
    return (fs::path(env) / "checkpoint").string();
  }
  const fs::path compiled = fs::path(SAMEBITS_TINY_QWEN_DIR) / "checkpoint";
  if (fs::is_directory(compiled, ec)) return compiled.string();
  const fs::path relative = fs::path("models") / "tiny_qwen" / "checkpoint";
  if (fs::is_directory(relative, ec)) return fs::absolute(relative, ec).string();
  return compiled.string();
}

absl::StatusOr<ModelSource> resolve_model(const std::string& spec) {
  ModelSource out;
  if (spec == kBuiltinModelSpec) {
    const std::string dir = builtin_checkpoint_dir();
    auto ckpt = open_hf_checkpoint(dir);
    if (!ckpt.ok()) {
      return absl::Status(ckpt.status().code(), absl::StrCat("model 'builtin': ", ckpt.status().message()));
    }
    out.weights_digest = mapped_weights_digest(*ckpt);
    out.config = std::move(ckpt->config);
    out.config.name = "tiny";
    out.checkpoint = std::move(ckpt->tensors);
    out.description = "builtin: trained tiny Qwen3, byte-level (models/tiny_qwen/checkpoint)";
  } else if (absl::StartsWith(spec, "synthetic:")) {
    std::vector<std::string> parts = absl::StrSplit(spec, ':');
    if (parts.size() > 3 || parts[1].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("model '", spec, "': expected synthetic:<config>[:<seed>]"));
    }
    uint64_t seed = 0;
    if (parts.size() == 3 && !absl::SimpleAtoi(parts[2], &seed)) {
      return absl::InvalidArgumentError(absl::StrCat("model '", spec, "': seed '", parts[2],
                                                     "' is not a non-negative integer"));
    }
    auto config = builtin_config(parts[1]);
    if (!config.ok()) {
      return absl::Status(config.status().code(), absl::StrCat("model '", spec, "': ", config.status().message()));
    }
    out.config = *config;
    out.synthetic = true;
    out.synthetic_seed = seed;
    out.description = absl::StrCat("synthetic: ", parts[1], " shape, seeded weights (seed ", seed, ")");
  } else {
    std::error_code ec;
    if (!std::filesystem::is_directory(spec, ec)) {
      return absl::NotFoundError(absl::StrCat("model '", spec, "': not 'builtin', 'synthetic:<config>[:<seed>]' or ",
                                              "a checkpoint directory"));
    }
    auto ckpt = open_hf_checkpoint(spec);
    if (!ckpt.ok()) return ckpt.status();
    out.weights_digest = mapped_weights_digest(*ckpt);
    out.config = std::move(ckpt->config);
    out.checkpoint = ckpt->tensors;
    out.description = absl::StrCat("checkpoint ", spec, " (", ckpt->architecture, ", ", ckpt->num_files,
                                   ckpt->num_files == 1 ? " file" : " files",
                                   ckpt->torch_dtype.empty() ? "" : ", " + ckpt->torch_dtype, ")");
    if (std::filesystem::exists(std::filesystem::path(spec) / "tokenizer.json", ec)) {
      auto bpe = BpeTokenizer::load(spec);
      if (!bpe.ok()) return bpe.status();
      if ((*bpe)->vocab_size() > out.config.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat(spec, "/tokenizer.json: ", (*bpe)->vocab_size(),
                                                       " tokens do not fit config.json's vocab_size ",
                                                       out.config.vocab_size));
      }
      out.tokenizer = std::shared_ptr<const TextTokenizer>(std::move(*bpe));
      absl::StrAppend(&out.description, "; tokenizer: ", out.tokenizer->description());
    }
  }
  // Checkpoints without tokenizer.json (the built-in one, synthetic weights) read bytes after BOS 256.
  if (!out.tokenizer) out.tokenizer = std::make_shared<ByteTokenizer>();
  if (out.synthetic) out.weights_digest = synthetic_weights_digest(out.config, out.synthetic_seed);
  return out;
}

absl::StatusOr<std::unique_ptr<Model>> build_model(const ModelSource& source, const Backend& backend, KvCacheShape kv) {
  if (source.synthetic) return Model::create_synthetic(backend, source.config, source.synthetic_seed, kv);
  if (source.checkpoint) return Model::create_mapped(backend, source.config, *source.checkpoint, source.weights_digest, kv);
  return Model::create(backend, source.config, source.weights, kv);
}

}  // namespace samebits
