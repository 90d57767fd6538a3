#include "harness/scenario/yaml_fields.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/input_file.h"
#include "yaml-cpp/eventhandler.h"

namespace samebits {

namespace {

absl::Status syntax_error(const std::string& file, int line, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(printable(file), ":", line, ": (syntax): ", printable(message, 200)));
}

// Counts documents (and where the second starts); ignores their content.
struct DocumentCounter : YAML::EventHandler {
  int documents = 0;
  YAML::Mark second_start = YAML::Mark::null_mark();
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents == 2) second_start = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Walks a document as its readers see it: an alias (*name) stands for the whole node it names, so
// a few bytes of aliases to aliases can stand for exponentially many nodes ("billion laughs"). The
// walk counts the nodes and scalar bytes so seen against a budget of the text's own size (without
// aliases no document exceeds it: every node but an empty one takes a byte, an empty one follows a
// key or separator) and stops at once past the budget or below kMaxNestingDepth levels.
struct DocumentWalk {
  int64_t nodes_left;
  int64_t bytes_left;
  bool over_budget() const { return nodes_left < 0 || bytes_left < 0; }

  // The deepest nesting under `node` (a scalar is 0), stopping once past `limit`.
  int depth(const YAML::Node& node, int limit) {
    --nodes_left;
    if (node.IsScalar()) bytes_left -= int64_t(node.Scalar().size());
    if (limit < 0 || over_budget() || !(node.IsMap() || node.IsSequence())) return 0;
    int deepest = 0;
    for (const auto& item : node) {
      if (node.IsMap()) {
        deepest = std::max({deepest, depth(item.first, limit - 1), depth(item.second, limit - 1)});
      } else {
        deepest = std::max(deepest, depth(item, limit - 1));
      }
      if (deepest > limit || over_budget()) break;
    }
    return deepest + 1;
  }
};

}  // namespace

absl::StatusOr<YAML::Node> load_yaml_document(std::string_view text, const std::string& file) {
  int line = 1;
  for (unsigned char c : text) {
    if (c == '\n') ++line;
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
      return syntax_error(file, line, absl::StrCat("control character ", printable(std::string(1, char(c))),
                                                   " (a YAML file is text)"));
  }
  // YAML::LoadAll is not used: on a stray ',' after a node's anchor or tag at the top level
  // ("&a ,") yaml-cpp 0.7 yields empty documents forever, growing without bound. The first
  // document is loaded alone, and the stream's documents are counted, stopping at the second.
  YAML::Node root;
  DocumentCounter counter;
  try {
    root = YAML::Load(std::string(text));
    std::istringstream stream{std::string(text)};
    YAML::Parser parser(stream);
    while (counter.documents < 2 && parser.HandleNextDocument(counter)) {
    }
  } catch (const YAML::Exception& e) {
    return syntax_error(file, e.mark.is_null() ? 1 : e.mark.line + 1, e.msg);
  } catch (const std::exception& e) {
    return syntax_error(file, 1, e.what());
  }
  if (counter.documents > 1)
    return syntax_error(file, counter.second_start.is_null() ? 1 : counter.second_start.line + 1,
                        "a second YAML document (a file holds one)");
  DocumentWalk walk{2 * int64_t(text.size()) + 16, int64_t(text.size()) + 16};
  const int depth = walk.depth(root, kMaxNestingDepth);
  if (walk.over_budget())
    return syntax_error(file, 1, absl::StrCat("aliases (*name) expand the document beyond its own size (",
                                              text.size(), " bytes): write the repeated values out"));
  if (depth > kMaxNestingDepth)
    return syntax_error(file, 1, absl::StrCat("nested deeper than ", kMaxNestingDepth, " levels"));
  return root;
}

absl::Status yaml_error(const std::string& file, const YAML::Node& node, const std::string& field,
                        const std::string& message) {
  std::string where = printable(file);
  const YAML::Mark mark = node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
  if (!mark.is_null()) absl::StrAppend(&where, ":", mark.line + 1);
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", printable(field), ": ", printable(message, 200)));
}

std::string yaml_value_text(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "(empty)";
  if (node.IsScalar()) {
    return "'" + printable(node.Scalar(), 57) + "'";
  }
  if (node.IsSequence()) return "a list";
  return "a mapping";
}

YamlFields::YamlFields(std::string file, YAML::Node map, std::string prefix)
    : file_(std::move(file)), map_(std::move(map)), prefix_(std::move(prefix)) {
  if (!map_.IsMap()) {
    set_error(yaml_error(file_, map_, prefix_.empty() ? "(top level)" : prefix_,
                         yaml_value_text(map_) + " is not a mapping of fields"));
    return;
  }
  // yaml-cpp keeps every duplicate and lookups find the first: a repeated key is an error here.
  std::set<std::string> seen;
  for (const auto& kv : map_) {
    if (!kv.first.IsScalar()) {
      set_error(yaml_error(file_, kv.first, field("(key)"), yaml_value_text(kv.first) + " is not a plain key"));
      return;
    }
    if (!seen.insert(kv.first.Scalar()).second) {
      set_error(yaml_error(file_, kv.first, field(kv.first.Scalar()), "appears twice (each field once)"));
      return;
    }
  }
}

namespace {

// Numbers and booleans must be written plainly (3, true) or with their own tag (!!int 3): a
// quoted "3" or a !!str 3 is a string, which a typed field does not take.
bool plain_scalar(const YAML::Node& node, const char* core_tag) {
  return node.IsScalar() && (node.Tag() == "?" || node.Tag() == std::string("tag:yaml.org,2002:") + core_tag);
}

}  // namespace

bool YamlFields::has(const std::string& key) const {
  const YAML::Node& map = map_;
  return status_.ok() && map[key].IsDefined();
}

YAML::Node YamlFields::lookup(const std::string& key, bool required) {
  known_.insert(key);
  if (!status_.ok()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node& map = map_;
  YAML::Node node = map[key];
  if (!node.IsDefined() || node.IsNull()) {
    if (required) set_error(yaml_error(file_, map_, field(key), "missing (required)"));
    return YAML::Node(YAML::NodeType::Undefined);
  }
  return node;
}

void YamlFields::fail(const std::string& key, const std::string& message) {
  const YAML::Node& map = map_;
  YAML::Node node = status_.ok() ? map[key] : YAML::Node();
  set_error(yaml_error(file_, node.IsDefined() ? node : map_, field(key), message));
}

void YamlFields::read_int(const std::string& key, int64_t* out, int64_t min, int64_t max, bool required) {
  YAML::Node node = lookup(key, required);
  if (!node.IsDefined()) return;
  int64_t v = 0;
  // Strict: the whole scalar must be an integer ("3.5", "12abc" and "0x10" are rejected).
  std::string text = node.IsScalar() ? node.Scalar() : "";
  std::istringstream in(text);
  if (!plain_scalar(node, "int") || text.empty() || !(in >> v) || !in.eof()) {
    set_error(yaml_error(file_, node, field(key), yaml_value_text(node) + " is not an integer"));
    return;
  }
  if (v < min || v > max) {
    set_error(yaml_error(file_, node, field(key),
                         absl::StrCat(printable(text), " is not in [", min, ", ", max, "]")));
    return;
  }
  *out = v;
}

void YamlFields::read_int(const std::string& key, int* out, int min, int max, bool required) {
  int64_t v = *out;
  read_int(key, &v, min, max, required);
  *out = static_cast<int>(v);
}

void YamlFields::read_double(const std::string& key, double* out, double min, double max, bool required) {
  YAML::Node node = lookup(key, required);
  if (!node.IsDefined()) return;
  std::string text = node.IsScalar() ? node.Scalar() : "";
  double v = 0;
  std::istringstream in(text);
  if (!(plain_scalar(node, "float") || plain_scalar(node, "int")) || text.empty() || !(in >> v) || !in.eof() ||
      !std::isfinite(v)) {
    set_error(yaml_error(file_, node, field(key), yaml_value_text(node) + " is not a number"));
    return;
  }
  if (v < min || v > max) {
    set_error(yaml_error(file_, node, field(key), absl::StrCat(printable(text), " is not in [", min, ", ", max, "]")));
    return;
  }
  *out = v;
}

void YamlFields::read_float(const std::string& key, float* out, float min, float max, bool required) {
  double v = *out;
  read_double(key, &v, min, max, required);
  *out = static_cast<float>(v);
}

void YamlFields::read_bool(const std::string& key, bool* out, bool required) {
  YAML::Node node = lookup(key, required);
  if (!node.IsDefined()) return;
  const std::string text = plain_scalar(node, "bool") ? node.Scalar() : "";
  if (text == "true" || text == "True" || text == "yes" || text == "on") {
    *out = true;
  } else if (text == "false" || text == "False" || text == "no" || text == "off") {
    *out = false;
  } else {
    set_error(yaml_error(file_, node, field(key), yaml_value_text(node) + " is not true or false"));
  }
}

void YamlFields::read_string(const std::string& key, std::string* out, bool required) {
  YAML::Node node = lookup(key, required);
  if (!node.IsDefined()) return;
  if (!node.IsScalar()) {
    set_error(yaml_error(file_, node, field(key), yaml_value_text(node) + " is not a string"));
    return;
  }
  *out = node.Scalar();
}

void YamlFields::read_choice(const std::string& key, std::string* out,
                             const std::vector<std::string>& allowed, bool required) {
  YAML::Node node = lookup(key, required);
  if (!node.IsDefined()) return;
  const std::string text = node.IsScalar() ? node.Scalar() : "";
  for (const auto& a : allowed) {
    if (node.IsScalar() && text == a) {
      *out = text;
      return;
    }
  }
  set_error(yaml_error(file_, node, field(key),
                       yaml_value_text(node) + " is not one of " + absl::StrJoin(allowed, ", ")));
}

void YamlFields::read_choice_list(const std::string& key, std::vector<std::string>* out,
                                  const std::vector<std::string>& allowed, bool required) {
  YAML::Node node = lookup(key, required);
  if (!node.IsDefined()) return;
  std::vector<YAML::Node> items;
  if (node.IsScalar()) {
    items.push_back(node);
  } else if (node.IsSequence()) {
    for (const auto& item : node) items.push_back(item);
  } else {
    set_error(yaml_error(file_, node, field(key), yaml_value_text(node) + " is not a list"));
    return;
  }
  if (items.empty()) {
    set_error(yaml_error(file_, node, field(key), "an empty list (name at least one)"));
    return;
  }
  std::vector<std::string> values;
  for (const auto& item : items) {
    bool ok = false;
    for (const auto& a : allowed) ok = ok || (item.IsScalar() && item.Scalar() == a);
    if (!ok) {
      set_error(yaml_error(file_, item, field(key),
                           yaml_value_text(item) + " is not one of " + absl::StrJoin(allowed, ", ")));
      return;
    }
    for (const auto& v : values) {
      if (v == item.Scalar()) {
        set_error(yaml_error(file_, item, field(key), yaml_value_text(item) + " is listed twice"));
        return;
      }
    }
    values.push_back(item.Scalar());
  }
  *out = std::move(values);
}

std::optional<YamlFields> YamlFields::child(const std::string& key, bool required) {
  YAML::Node node = lookup(key, required);
  if (!node.IsDefined()) return std::nullopt;
  if (!node.IsMap()) {
    set_error(yaml_error(file_, node, field(key), yaml_value_text(node) + " is not a mapping of fields"));
    return std::nullopt;
  }
  return YamlFields(file_, node, field(key));
}

void YamlFields::read_int_list(const std::string& key, std::vector<int32_t>* out, int64_t min, int64_t max,
                               bool required) {
  YAML::Node node = lookup(key, required);
  if (!node.IsDefined()) return;
  if (!node.IsSequence() || node.size() == 0) {
    set_error(yaml_error(file_, node, field(key), yaml_value_text(node) + " is not a non-empty list of integers"));
    return;
  }
  std::vector<int32_t> values;
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    int64_t v = 0;
    std::string text = item.IsScalar() ? item.Scalar() : "";
    std::istringstream in(text);
    if (!item.IsScalar() || text.empty() || !(in >> v) || !in.eof() || v < min || v > max) {
      set_error(yaml_error(file_, item, absl::StrCat(field(key), "[", i, "]"),
                           absl::StrCat(yaml_value_text(item), " is not an integer in [", min, ", ", max, "]")));
      return;
    }
    values.push_back(int32_t(v));
  }
  *out = std::move(values);
}

std::vector<YamlFields> YamlFields::child_list(const std::string& key, bool required) {
  YAML::Node node = lookup(key, required);
  std::vector<YamlFields> out;
  if (!node.IsDefined()) return out;
  if (!node.IsSequence() || node.size() == 0) {
    set_error(yaml_error(file_, node, field(key), yaml_value_text(node) + " is not a non-empty list"));
    return out;
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node item = node[i];
    if (!item.IsMap()) {
      set_error(yaml_error(file_, item, absl::StrCat(field(key), "[", i, "]"),
                           yaml_value_text(item) + " is not a mapping of fields"));
      return {};
    }
    out.emplace_back(file_, item, absl::StrCat(field(key), "[", i, "]"));
  }
  return out;
}

absl::Status YamlFields::finish() {
  if (!status_.ok()) return status_;
  std::vector<std::string> expected(known_.begin(), known_.end());
  for (const auto& kv : map_) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "(non-scalar key)";
    if (!known_.count(key)) {
      return yaml_error(file_, kv.first, field(key),
                        "unknown field (expected one of: " + absl::StrJoin(expected, ", ") + ")");
    }
  }
  return status_;
}

}  // namespace samebits
