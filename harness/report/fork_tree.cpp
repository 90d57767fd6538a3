// The fork tree of a mode's completions: a prefix tree over the unique completions, compressed to
// one node per branch. The Markdown and HTML reports draw it; the text form is below.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "harness/report/report.h"
#include "models/tiny_qwen/tokenizer.h"

namespace samebits {
namespace {

ForkNode build(const std::vector<CompletionGroup>& groups, std::vector<int> members, int begin) {
  ForkNode node;
  node.begin = begin;
  node.completion = members[0];
  for (int g : members) {
    node.count += groups[size_t(g)].count;
    node.main = node.main || g == 0;
    if (g == 0 || (!node.main && groups[size_t(g)].count > groups[size_t(node.completion)].count)) node.completion = g;
  }
  // The members agree on tokens [begin, end).
  const auto& first = groups[size_t(members[0])].tokens;
  int end = int(first.size());
  for (int g : members) {
    const auto& t = groups[size_t(g)].tokens;
    int i = begin;
    while (i < end && i < int(t.size()) && t[size_t(i)] == first[size_t(i)]) ++i;
    end = std::min(end, i);
  }
  node.end = end;
  if (members.size() == 1) return node;
  // Split by the next token (-1: the completion ends here).
  std::map<int32_t, std::vector<int>> by_token;
  for (int g : members) {
    const auto& t = groups[size_t(g)].tokens;
    by_token[end < int(t.size()) ? t[size_t(end)] : -1].push_back(g);
  }
  // Members that agree to their common end are the same completion (the results reader refuses
  // such files); splitting them again would never end.
  if (by_token.size() == 1) return node;
  for (auto& [token, part] : by_token) node.children.push_back(build(groups, std::move(part), end));
  std::sort(node.children.begin(), node.children.end(), [](const ForkNode& a, const ForkNode& b) {
    if (a.main != b.main) return a.main;
    if (a.count != b.count) return a.count > b.count;
    return a.completion < b.completion;
  });
  return node;
}

std::string one_line(const std::string& text) { return absl::StrReplaceAll(text, {{"\n", "\\n"}, {"\r", "\\r"}}); }

void draw(const ModeResult& m, const ForkNode& n, const std::string& indent, bool last, bool root, int context,
          std::string* out) {
  const auto& tokens = m.groups[size_t(n.completion)].tokens;
  std::string line = root ? "" : indent + (last ? "└─ " : "├─ ");
  line += absl::StrCat(n.count, n.count == 1 ? " sample" : " samples", n.main ? " (main)" : "");
  if (root) {
    const int from = std::max(0, n.end - context);
    line += absl::StrCat(" share tokens 0-", n.end - 1, ": \"", from > 0 ? "…" : "",
                         one_line(report_text(tokens, size_t(from), size_t(n.end))), "\"");
  } else if (n.begin >= int(tokens.size())) {
    line += absl::StrCat(" at token ", n.begin, ": (end of completion)");
  } else {
    const int to = std::min(n.end, n.begin + context);
    line += absl::StrCat(" at token ", n.begin, ": \"", one_line(report_text(tokens, size_t(n.begin), size_t(to))),
                         to < n.end ? "…" : "", "\"");
  }
  *out += line + "\n";
  const std::string child_indent = root ? "" : indent + (last ? "   " : "│  ");
  for (size_t i = 0; i < n.children.size(); ++i)
    draw(m, n.children[i], child_indent, i + 1 == n.children.size(), false, context, out);
}

}  // namespace

std::string report_text(const std::vector<int32_t>& tokens, size_t begin, size_t end) {
  return decode_text(ByteTokenizer(), tokens, begin, end);
}

ForkNode fork_tree(const ModeResult& m) {
  if (m.groups.empty()) return ForkNode{};
  std::vector<int> all(m.groups.size());
  for (size_t g = 0; g < all.size(); ++g) all[g] = int(g);
  return build(m.groups, std::move(all), 0);
}

std::string format_fork_tree(const ModeResult& m, int context) {
  if (m.groups.empty()) return "";
  std::string out;
  draw(m, fork_tree(m), "", true, true, context, &out);
  return out;
}

}  // namespace samebits
