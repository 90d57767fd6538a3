// safetensors: 8-byte little-endian header length N, N bytes of JSON header
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the data
// section. Everything in the header is checked against the file before a tensor is read, so a
// damaged file gives one line naming the file and the tensor, never a crash.
#include "models/tiny_qwen/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/input_file.h"
#include "nlohmann/json.hpp"

namespace samebits {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

using nlohmann::json;
constexpr uint64_t kMaxHeaderBytes = kMaxSafetensorsHeaderBytes;  // the format's own limit

absl::Status fail(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(printable(path), ": ", printable(what, 300)));
}

std::string shape_str(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

// f16 bits -> f32, exactly (every f16 value, subnormals included, is an f32 value).
float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;  // signed zero
  } else {
    // Subnormal: value = mant * 2^-24; normalise the mantissa.
    int shift = 0;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      ++shift;
    }
    bits = sign | (uint32_t(113 - shift) << 23) | ((mant & 0x3ffu) << 13);
  }
  return bits_float(bits);
}

absl::StatusOr<StDtype> parse_dtype(const std::string& s) {
  if (s == "BF16") return StDtype::kBF16;
  if (s == "F16") return StDtype::kF16;
  if (s == "F32") return StDtype::kF32;
  return absl::InvalidArgumentError(s);
}

absl::StatusOr<StTensorInfo> parse_entry(const std::string& path, const std::string& name, const json& e) {
  StTensorInfo info;
  info.name = name;
  const std::string where = absl::StrCat("tensor '", printable(name, 60), "'");
  if (!e.is_object()) return fail(path, absl::StrCat(where, ": header entry is not an object"));
  auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) return fail(path, absl::StrCat(where, ": dtype missing or not a string"));
  auto parsed = parse_dtype(dt->get<std::string>());
  if (!parsed.ok()) {
    return fail(path, absl::StrCat(where, ": unsupported dtype '", printable(dt->get<std::string>(), 20), "' (BF16, F16, F32 are read)"));
  }
  info.dtype = *parsed;
  auto sh = e.find("shape");
  if (sh == e.end() || !sh->is_array()) return fail(path, absl::StrCat(where, ": shape missing or not a list"));
  // The element count is checked before each multiplication, so it cannot wrap ([2^40, 2^24] is
  // too large, not 0).
  constexpr uint64_t kMaxElements = uint64_t(1) << 50;
  uint64_t numel = 1;
  for (const json& d : *sh) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t(1) << 40)) {
      return fail(path, absl::StrCat(where, ": shape ", json_shown(*sh), " is not a list of sizes"));
    }
    const uint64_t size = uint64_t(d.get<int64_t>());
    info.shape.push_back(int64_t(size));
    if (size != 0 && numel > kMaxElements / size)
      return fail(path, absl::StrCat(where, ": shape ", json_shown(*sh), " is too large (over 2^50 elements)"));
    numel *= size;
  }
  auto off = e.find("data_offsets");
  if (off == e.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned()) {
    return fail(path, absl::StrCat(where, ": data_offsets missing or not two offsets"));
  }
  info.begin = (*off)[0].get<uint64_t>();
  info.end = (*off)[1].get<uint64_t>();
  if (info.end < info.begin) {
    return fail(path, absl::StrCat(where, ": data_offsets [", info.begin, ", ", info.end, "] out of range (end before begin)"));
  }
  const uint64_t need = numel * st_dtype_size(info.dtype);
  if (info.end - info.begin != need) {
    return fail(path, absl::StrCat(where, ": data_offsets [", info.begin, ", ", info.end, "] hold ", info.end - info.begin,
                                   " bytes but shape ", shape_str(info.shape), " of ", st_dtype_name(info.dtype),
                                   " needs ", need));
  }
  return info;
}

// Offsets inside the data section: a file whose tensors tile [0, end) but whose data section is
// shorter is reported as truncated; any other offset past the end as out of range.
absl::Status check_layout(const std::string& path, const std::map<std::string, StTensorInfo>& tensors,
                          uint64_t data_bytes) {
  std::vector<const StTensorInfo*> order;
  for (const auto& [name, info] : tensors) order.push_back(&info);
  std::sort(order.begin(), order.end(), [](const StTensorInfo* a, const StTensorInfo* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  bool contiguous = true;
  uint64_t cursor = 0;  // the largest end so far
  const StTensorInfo* last = nullptr;
  for (const StTensorInfo* t : order) {
    if (last != nullptr && t->begin < cursor && t->end > t->begin) {
      return fail(path, absl::StrCat("tensors '", last->name, "' and '", t->name, "' overlap in the data section"));
    }
    contiguous = contiguous && t->begin == cursor;
    if (t->end >= cursor) {
      cursor = t->end;
      last = t;
    }
  }
  for (const StTensorInfo* t : order) {
    if (t->end <= data_bytes) continue;
    if (contiguous) {
      return fail(path, absl::StrCat("file truncated: the header describes ", cursor, " data bytes but the file holds ",
                                     data_bytes, " (tensor '", t->name, "' is cut off)"));
    }
    return fail(path, absl::StrCat("tensor '", t->name, "': data_offsets [", t->begin, ", ", t->end,
                                   "] out of range (the data section holds ", data_bytes, " bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace

const char* st_dtype_name(StDtype d) {
  switch (d) {
    case StDtype::kBF16: return "BF16";
    case StDtype::kF16: return "F16";
    case StDtype::kF32: return "F32";
  }
  return "?";
}

size_t st_dtype_size(StDtype d) { return d == StDtype::kF32 ? 4 : 2; }

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) munmap(const_cast<uint8_t*>(map_), map_size_);
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::NotFoundError(absl::StrCat(path, ": cannot be opened: ", std::strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail(path, "not a regular file");
  }
  const uint64_t size = uint64_t(st.st_size);
  if (size < 8) {
    ::close(fd);
    return fail(path, absl::StrCat("file truncated: ", size, " bytes, shorter than the 8-byte header length"));
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return absl::InternalError(absl::StrCat(path, ": mmap failed: ", std::strerror(errno)));
  f->map_ = static_cast<const uint8_t*>(map);
  f->map_size_ = size;
  // Tensors are read front to back, once: let the kernel read ahead.
  madvise(map, size, MADV_SEQUENTIAL);

  uint64_t header_len = 0;
  std::memcpy(&header_len, f->map_, 8);
  if (header_len > kMaxHeaderBytes || header_len > size - 8) {
    return fail(path, absl::StrCat("header length ", header_len, " is out of range: the file holds ", size - 8,
                                   " bytes after the length field (truncated file or bad header length)"));
  }
  auto header = parse_safetensors_header(
      std::string_view(reinterpret_cast<const char*>(f->map_ + 8), size_t(header_len)), size - 8 - header_len, path);
  if (!header.ok()) return header.status();
  f->tensors_ = std::move(header->tensors);
  f->metadata_ = std::move(header->metadata);
  f->data_ = f->map_ + 8 + header_len;
  return f;
}

absl::StatusOr<SafetensorsHeader> parse_safetensors_header(std::string_view text, uint64_t data_bytes,
                                                           const std::string& path) {
  json header;
  if (absl::Status s = parse_json_text(text, path + " (header)", &header); !s.ok()) return s;
  if (!header.is_object()) return fail(path, "header is not a JSON object");
  SafetensorsHeader out;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return fail(path, "__metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) return fail(path, absl::StrCat("__metadata__.", printable(k, 40), " is not a string"));
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    auto info = parse_entry(path, name, entry);
    if (!info.ok()) return info.status();
    out.tensors[name] = std::move(*info);
  }
  if (absl::Status s = check_layout(path, out.tensors, data_bytes); !s.ok()) return s;
  return out;
}

namespace {

// n values of `dtype` at src (not necessarily aligned: read through memcpy) as bf16.
void convert_to_bf16(StDtype dtype, const uint8_t* src, size_t n, bf16* out) {
  switch (dtype) {
    case StDtype::kBF16:
      std::memcpy(out, src, n * 2);
      break;
    case StDtype::kF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = to_bf16(f16_to_f32(h));
      }
      break;
    case StDtype::kF32:
      for (size_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, src + 4 * i, 4);
        out[i] = to_bf16(v);
      }
      break;
  }
}

}  // namespace

const StTensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

absl::StatusOr<HostTensor> SafetensorsFile::read_bf16(const std::string& name) const {
  const StTensorInfo* info = find(name);
  if (info == nullptr) return absl::NotFoundError(absl::StrCat(path_, ": no tensor '", name, "'"));
  HostTensor t;
  t.shape = info->shape;
  t.data.resize((info->end - info->begin) / st_dtype_size(info->dtype));
  convert_to_bf16(info->dtype, data_ + info->begin, t.data.size(), t.data.data());
  return t;
}

absl::Status SafetensorsFile::read_bf16_range(const std::string& name, uint64_t begin, uint64_t n, bf16* out) const {
  const StTensorInfo* info = find(name);
  if (info == nullptr) return absl::NotFoundError(absl::StrCat(path_, ": no tensor '", name, "'"));
  const uint64_t size = st_dtype_size(info->dtype), count = (info->end - info->begin) / size;
  if (begin > count || n > count - begin) {
    return absl::OutOfRangeError(absl::StrCat(path_, ": tensor '", name, "': values [", begin, ", ", begin + n,
                                              ") outside its ", count));
  }
  convert_to_bf16(info->dtype, data_ + info->begin + begin * size, size_t(n), out);
  return absl::OkStatus();
}

absl::StatusOr<SafetensorsSet> SafetensorsSet::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  SafetensorsSet set;
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  const fs::path single_path = fs::path(dir) / "model.safetensors";
  std::error_code ec;
  if (!fs::exists(index_path, ec)) {
    if (!fs::exists(single_path, ec)) {
      return absl::NotFoundError(absl::StrCat(dir, ": no model.safetensors or model.safetensors.index.json"));
    }
    auto file = SafetensorsFile::open(single_path.string());
    if (!file.ok()) return file.status();
    for (const auto& [name, info] : (*file)->tensors()) set.index_[name] = file->get();
    set.files_.push_back(std::move(*file));
    return set;
  }

  const std::string ipath = index_path.string();
  json index;
  if (absl::Status s = read_json_input(ipath, &index); !s.ok()) return s;
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    return fail(ipath, "weight_map missing or not an object");
  }
  std::map<std::string, SafetensorsFile*> shards;
  for (const auto& [name, shard] : index["weight_map"].items()) {
    if (!shard.is_string()) return fail(ipath, absl::StrCat("tensor '", name, "': shard name is not a string"));
    const std::string file = shard.get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..") {
      return fail(ipath, absl::StrCat("tensor '", name, "': shard '", file, "' is not a file name in the directory"));
    }
    if (!shards.count(file)) {
      auto opened = SafetensorsFile::open((fs::path(dir) / file).string());
      if (!opened.ok()) return opened.status();
      shards[file] = opened->get();
      set.files_.push_back(std::move(*opened));
    }
    if (!shards[file]->tensors().count(name)) {
      return fail(ipath, absl::StrCat("tensor '", name, "' is mapped to shard '", file, "', which does not hold it"));
    }
    set.index_[name] = shards[file];
  }
  for (const auto& f : set.files_) {
    for (const auto& [name, info] : f->tensors()) {
      auto listed = set.index_.find(name);
      if (listed != set.index_.end() && listed->second == f.get()) continue;
      return fail(f->path(), absl::StrCat("unexpected tensor '", name, "': not listed for this shard in ",
                                          "model.safetensors.index.json"));
    }
  }
  return set;
}

const StTensorInfo* SafetensorsSet::info(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &it->second->tensors().at(name);
}

absl::StatusOr<HostTensor> SafetensorsSet::read_bf16(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return absl::NotFoundError(absl::StrCat("no tensor '", name, "' in the checkpoint"));
  return it->second->read_bf16(name);
}

}  // namespace samebits
