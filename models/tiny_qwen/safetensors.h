// Memory-mapped safetensors reader: one file, or a sharded checkpoint through
// model.safetensors.index.json. The header is validated in full before any tensor is read
// (length, JSON, dtype, shape, data_offsets inside the data section, no overlaps); tensors are
// converted to bf16 on read: bf16 copied, f32 rounded to nearest even (to_bf16), f16 widened to
// f32 exactly and then rounded the same way.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "models/tiny_qwen/weights.h"

namespace samebits {

enum class StDtype { kBF16, kF16, kF32 };
const char* st_dtype_name(StDtype d);  // "BF16", "F16", "F32"
size_t st_dtype_size(StDtype d);

struct StTensorInfo {
  std::string name;
  StDtype dtype = StDtype::kBF16;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets inside the data section
};

// A parsed header: every entry checked (dtype, shape, offsets inside `data_bytes`, no overlaps).
struct SafetensorsHeader {
  std::map<std::string, StTensorInfo> tensors;
  std::map<std::string, std::string> metadata;
};
// `text` is the JSON header (within kMaxSafetensorsHeaderBytes); errors name `path`.
absl::StatusOr<SafetensorsHeader> parse_safetensors_header(std::string_view text, uint64_t data_bytes,
                                                           const std::string& path);

// One mapped .safetensors file.
class SafetensorsFile {
 public:
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, StTensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // The tensor converted to bf16; NotFound naming file and tensor when absent.
  absl::StatusOr<HostTensor> read_bf16(const std::string& name) const;
  // Values [begin, begin + n) of the tensor converted to bf16 into out (n values), straight from
  // the mapping: no copy of the whole tensor in host memory.
  absl::Status read_bf16_range(const std::string& name, uint64_t begin, uint64_t n, bf16* out) const;
  // The tensor's bytes in the mapping (info.end - info.begin of them), for bf16 tensors that go
  // to the device as they are; nullptr when absent.
  const uint8_t* mapped_bytes(const std::string& name) const {
    const StTensorInfo* info = find(name);
    return info == nullptr ? nullptr : data_ + info->begin;
  }
  const StTensorInfo* find(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  const uint8_t* map_ = nullptr;
  size_t map_size_ = 0;
  const uint8_t* data_ = nullptr;  // start of the data section
  std::map<std::string, StTensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// All tensors of a checkpoint directory: model.safetensors, or the shards that
// model.safetensors.index.json lists (every listed tensor must be in the shard it names).
class SafetensorsSet {
 public:
  static absl::StatusOr<SafetensorsSet> open_dir(const std::string& dir);
  // Tensor name -> the file holding it.
  const std::map<std::string, const SafetensorsFile*>& index() const { return index_; }
  const StTensorInfo* info(const std::string& name) const;
  absl::StatusOr<HostTensor> read_bf16(const std::string& name) const;
  size_t num_files() const { return files_.size(); }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> index_;
};

}  // namespace samebits
