#include "common/input_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <vector>

#include <sys/stat.h>

#include "absl/strings/str_cat.h"

namespace samebits {

absl::StatusOr<int64_t> check_input_file(const std::string& path, int64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return absl::NotFoundError(absl::StrCat(printable(path), ": cannot open: ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    return absl::InvalidArgumentError(absl::StrCat(printable(path), ": is not a regular file"));
  if (st.st_size > max_bytes)
    return absl::InvalidArgumentError(absl::StrCat(printable(path), ": ", st.st_size, " bytes is over the limit of ",
                                                   max_bytes, " bytes for this kind of file"));
  return int64_t(st.st_size);
}

absl::Status read_input_file(const std::string& path, int64_t max_bytes, std::string* out) {
  auto size = check_input_file(path, max_bytes);
  if (!size.ok()) return size.status();
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return absl::NotFoundError(absl::StrCat(printable(path), ": cannot open: ", std::strerror(errno)));
  // Read at most one byte past the limit: the file may have grown since stat().
  out->assign(size_t(*size), '\0');
  size_t got = std::fread(out->data(), 1, out->size(), f);
  char extra = 0;
  const bool grew = std::fread(&extra, 1, 1, f) == 1;
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return absl::DataLossError(absl::StrCat(printable(path), ": read error"));
  if (grew || got != out->size())
    return absl::InvalidArgumentError(absl::StrCat(printable(path), ": changed size while being read"));
  return absl::OkStatus();
}

namespace {

// Thrown from the parser callback to stop at the first value out of bounds.
struct JsonLimit {
  std::string message;
};

}  // namespace

absl::Status parse_json_text(std::string_view text, const std::string& origin, nlohmann::json* out) {
  using nlohmann::json;
  // Keys seen so far in each open object (an empty optional for an open array): a repeated key
  // would otherwise silently replace the earlier value.
  std::vector<std::optional<std::set<std::string>>> open;
  const json::parser_callback_t limits = [&open](int depth, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    if (event == E::object_start) open.emplace_back(std::set<std::string>());
    if (event == E::array_start) open.emplace_back();
    if ((event == E::object_end || event == E::array_end) && !open.empty()) open.pop_back();
    if (event == E::key && !open.empty() && open.back() && !open.back()->insert(parsed.get<std::string>()).second)
      throw JsonLimit{absl::StrCat("key '", printable(parsed.get<std::string>(), 40), "' appears twice in one object")};
    if (depth > kMaxNestingDepth) throw JsonLimit{absl::StrCat("nested deeper than ", kMaxNestingDepth, " levels")};
    if (event == json::parse_event_t::value && parsed.is_number_unsigned() &&
        parsed.get<uint64_t>() > uint64_t(INT64_MAX))
      throw JsonLimit{absl::StrCat("integer ", parsed.get<uint64_t>(), " is out of range (above 2^63-1)")};
    return true;
  };
  try {
    *out = json::parse(text.begin(), text.end(), limits);
  } catch (const JsonLimit& e) {
    return absl::InvalidArgumentError(absl::StrCat(printable(origin), ": (syntax): ", e.message));
  } catch (const json::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(printable(origin), ": (syntax): not valid JSON at byte ", e.byte));
  } catch (const json::out_of_range&) {
    return absl::InvalidArgumentError(absl::StrCat(printable(origin), ": (syntax): a number is out of range (beyond a double)"));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(printable(origin), ": (syntax): ", printable(e.what())));
  }
  return absl::OkStatus();
}

absl::Status read_json_input(const std::string& path, nlohmann::json* out) {
  std::string text;
  if (absl::Status s = read_input_file(path, kMaxTextInputBytes, &text); !s.ok()) return s;
  return parse_json_text(text, path, out);
}

std::string printable(std::string_view text, size_t max_chars) {
  std::string out;
  for (unsigned char c : text) {
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string json_text(const nlohmann::json& value, int indent) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_shown(const nlohmann::json& value) {
  return printable(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 37);
}

}  // namespace samebits
