// Strict reading of JSON objects for result, golden and trace files: every error is one line
// naming the file and the field path ("golden/feynman/cpu.json: modes.default.expected: missing").
#pragma once
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "common/output_files.h"
#include "nlohmann/json.hpp"

namespace samebits {

class JsonFields {
 public:
  JsonFields(std::string file, const nlohmann::json* object, std::string path);

  // Each returns false (and keeps the first error) when the field is missing or has the wrong type.
  bool get(const std::string& key, std::string* out);
  bool get(const std::string& key, int64_t* out);
  bool get(const std::string& key, int* out);
  bool get(const std::string& key, double* out);
  bool get(const std::string& key, bool* out);
  // As get, and the value must lie in [min, max] (else "V is not in [min, max]" and false).
  bool get(const std::string& key, int64_t* out, int64_t min, int64_t max);
  bool get(const std::string& key, int* out, int min, int max);
  bool get(const std::string& key, double* out, double min, double max);
  bool get_digest(const std::string& key, uint64_t* out);  // 16 hex digits
  // The member (nullptr with an error when missing or not of the kind).
  const nlohmann::json* object(const std::string& key);
  const nlohmann::json* array(const std::string& key);
  bool has(const std::string& key) const { return json_ && json_->is_object() && json_->contains(key); }

  void fail(const std::string& key, const std::string& message);
  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const std::string& file() const { return file_; }
  absl::Status status() const { return status_; }
  void merge(const absl::Status& s) {
    if (status_.ok()) status_ = s;
  }

 private:
  const nlohmann::json* member(const std::string& key, const char* kind);
  std::string file_;
  const nlohmann::json* json_;
  std::string path_;
  absl::Status status_;
};

// Parses a whole file (a regular file within kMaxTextInputBytes, common/input_file.h); a syntax
// error names the file and the byte offset.
absl::Status read_json_file(const std::string& path, nlohmann::json* out);

}  // namespace samebits
