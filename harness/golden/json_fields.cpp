#include "harness/golden/json_fields.h"

#include "absl/strings/str_cat.h"
#include "common/input_file.h"
#include "harness/golden/digest.h"

namespace samebits {

JsonFields::JsonFields(std::string file, const nlohmann::json* object, std::string path)
    : file_(std::move(file)), json_(object), path_(std::move(path)) {
  if (!json_ || !json_->is_object())
    status_ = absl::InvalidArgumentError(absl::StrCat(file_, ": ", path_.empty() ? "(top level)" : path_,
                                                      ": is not a JSON object"));
}

void JsonFields::fail(const std::string& key, const std::string& message) {
  merge(absl::InvalidArgumentError(absl::StrCat(printable(file_), ": ", printable(field(key)), ": ", printable(message, 200))));
}

const nlohmann::json* JsonFields::member(const std::string& key, const char* kind) {
  if (!status_.ok()) return nullptr;
  auto it = json_->find(key);
  if (it == json_->end()) {
    fail(key, "missing");
    return nullptr;
  }
  const nlohmann::json& v = *it;
  const std::string k = kind;
  const bool ok = (k == "string" && v.is_string()) || (k == "integer" && v.is_number_integer()) ||
                  (k == "number" && v.is_number()) || (k == "boolean" && v.is_boolean()) ||
                  (k == "object" && v.is_object()) || (k == "array" && v.is_array());
  if (!ok) {
    const std::string shown = json_shown(v);
    fail(key, shown + " is not a" + std::string(k[0] == 'a' || k[0] == 'i' || k[0] == 'o' ? "n " : " ") + k);
    return nullptr;
  }
  return &v;
}

bool JsonFields::get(const std::string& key, std::string* out) {
  const nlohmann::json* v = member(key, "string");
  if (v) *out = v->get<std::string>();
  return v != nullptr;
}
bool JsonFields::get(const std::string& key, int64_t* out) {
  const nlohmann::json* v = member(key, "integer");
  if (v) *out = v->get<int64_t>();
  return v != nullptr;
}
bool JsonFields::get(const std::string& key, int* out) {
  int64_t v = 0;
  if (!get(key, &v)) return false;
  if (v < INT32_MIN || v > INT32_MAX) {
    fail(key, absl::StrCat(v, " is out of range"));
    return false;
  }
  *out = int(v);
  return true;
}
bool JsonFields::get(const std::string& key, int64_t* out, int64_t min, int64_t max) {
  if (!get(key, out)) return false;
  if (*out < min || *out > max) {
    fail(key, absl::StrCat(*out, " is not in [", min, ", ", max, "]"));
    return false;
  }
  return true;
}
bool JsonFields::get(const std::string& key, int* out, int min, int max) {
  int64_t v = 0;
  if (!get(key, &v, min, max)) return false;
  *out = int(v);
  return true;
}
bool JsonFields::get(const std::string& key, double* out, double min, double max) {
  if (!get(key, out)) return false;
  if (!(*out >= min && *out <= max)) {
    fail(key, absl::StrCat(*out, " is not in [", min, ", ", max, "]"));
    return false;
  }
  return true;
}
bool JsonFields::get(const std::string& key, double* out) {
  const nlohmann::json* v = member(key, "number");
  if (v) *out = v->get<double>();
  return v != nullptr;
}
bool JsonFields::get(const std::string& key, bool* out) {
  const nlohmann::json* v = member(key, "boolean");
  if (v) *out = v->get<bool>();
  return v != nullptr;
}
bool JsonFields::get_digest(const std::string& key, uint64_t* out) {
  std::string text;
  if (!get(key, &text)) return false;
  auto d = parse_digest_hex(text);
  if (!d) {
    fail(key, "'" + printable(text) + "' is not a digest (16 lowercase hex digits)");
    return false;
  }
  *out = *d;
  return true;
}
const nlohmann::json* JsonFields::object(const std::string& key) { return member(key, "object"); }
const nlohmann::json* JsonFields::array(const std::string& key) { return member(key, "array"); }

absl::Status read_json_file(const std::string& path, nlohmann::json* out) { return read_json_input(path, out); }

}  // namespace samebits
