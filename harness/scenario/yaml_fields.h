// Strict reading of YAML mappings: every field is typed and range-checked, unknown keys are
// errors, and every error is one line naming the file, the line (yaml-cpp's Mark), the dotted field
// path and the offending value: "feynman.yaml:12: mix.arrival.rate: -1 is not in [0.001, 64]".
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "yaml-cpp/yaml.h"

namespace samebits {

// Parses text that must hold exactly one YAML document: control characters other than tab, line
// feed and carriage return, a second document, nesting deeper than kMaxNestingDepth, aliases that
// expand the document beyond its own size and every yaml-cpp error become one line
// "file:line: (syntax): ...".
absl::StatusOr<YAML::Node> load_yaml_document(std::string_view text, const std::string& file);

// "file:line: field: message" (line 1-based; omitted when the node has no mark).
absl::Status yaml_error(const std::string& file, const YAML::Node& node, const std::string& field,
                        const std::string& message);
// The node's scalar text as written (or a short rendering of a sequence/map) for messages.
std::string yaml_value_text(const YAML::Node& node);

// Reads one mapping. The first error sticks: later reads are skipped and finish() returns it.
class YamlFields {
 public:
  YamlFields(std::string file, YAML::Node map, std::string prefix);

  bool has(const std::string& key) const;
  void read_int(const std::string& key, int64_t* out, int64_t min, int64_t max, bool required = false);
  void read_int(const std::string& key, int* out, int min, int max, bool required = false);
  void read_double(const std::string& key, double* out, double min, double max, bool required = false);
  void read_float(const std::string& key, float* out, float min, float max, bool required = false);
  void read_bool(const std::string& key, bool* out, bool required = false);
  void read_string(const std::string& key, std::string* out, bool required = false);
  // One of `allowed`.
  void read_choice(const std::string& key, std::string* out, const std::vector<std::string>& allowed,
                   bool required = false);
  // A sequence of choices, or one choice as a scalar.
  void read_choice_list(const std::string& key, std::vector<std::string>* out,
                        const std::vector<std::string>& allowed, bool required = false);
  // A non-empty sequence of integers, each in [min, max].
  void read_int_list(const std::string& key, std::vector<int32_t>* out, int64_t min, int64_t max,
                     bool required = false);
  // A nested mapping (nullopt when absent, or on error, or when not a mapping: then an error).
  std::optional<YamlFields> child(const std::string& key, bool required = false);
  // A non-empty sequence of mappings, each read as "key[i]" (empty when absent or on error).
  std::vector<YamlFields> child_list(const std::string& key, bool required = false);
  // Records an error about `key` from outside (cross-field checks).
  void fail(const std::string& key, const std::string& message);
  // Keeps a child's finish() status when it is the first error.
  void merge(absl::Status s) { set_error(std::move(s)); }

  // The first error, or the first unknown key, or OK.
  absl::Status finish();
  absl::Status status() const { return status_; }
  std::string field(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "." + key; }
  const std::string& file() const { return file_; }

 private:
  YAML::Node lookup(const std::string& key, bool required);
  void set_error(absl::Status s) {
    if (status_.ok()) status_ = std::move(s);
  }

  std::string file_;
  YAML::Node map_;
  std::string prefix_;
  std::set<std::string> known_;
  absl::Status status_;
};

}  // namespace samebits
