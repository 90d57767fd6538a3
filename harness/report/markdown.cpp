#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "harness/golden/digest.h"
#include "harness/report/report.h"

namespace samebits {
namespace {

// Text inside a Markdown table cell or inline code.
std::string cell(const std::string& text) {
  return absl::StrReplaceAll(text, {{"|", "\\|"}, {"\n", "\\n"}, {"`", "'"}, {"\r", "\\r"}});
}
std::string position(int p) { return p < 0 ? "-" : absl::StrCat(p); }

}  // namespace

std::string format_markdown(const RunResults& r, const ExplainReport* explained) {
  bool all_pass = true;
  for (const auto& m : r.modes) all_pass = all_pass && mode_passes(m);
  std::string out = absl::StrFormat("# samebits: %s %s\n\n", r.identity.scenario.name, all_pass ? "passed" : "FAILED");
  out += absl::StrFormat("%d samples, backend `%s` (%s), model `%s` (weights %s), kernel set v%d%s.\n\n", r.identity.samples,
                         r.identity.backend.id, cell(r.identity.backend.description), r.identity.model.spec,
                         digest_hex(r.identity.model.weights_digest), r.identity.backend.kernel_set_version,
                         r.identity.live ? ", live schedule" : ", seeded schedule");
  out += "| mode | unique completions | unique logit streams | first token divergence | first logit divergence | golden | tokens/s | wall s |\n";
  out += "|---|---:|---:|---:|---:|---|---:|---:|\n";
  for (const ModeResult& m : r.modes) {
    out += absl::StrFormat("| %s | %d | %d | %s | %s | %s | %.0f | %.1f |\n", mode_name(m.mode), m.unique_completions(),
                           m.unique_logit_streams(), position(m.earliest_token_divergence),
                           position(m.earliest_logit_divergence), m.golden.state, m.tokens_per_second(),
                           m.figures.wall_seconds);
  }
  for (const ModeResult& m : r.modes) {
    out += absl::StrFormat("\n## %s mode\n\n", mode_name(m.mode));
    if (!m.golden.detail.empty()) out += absl::StrFormat("Golden: **%s**: %s\n\n", m.golden.state, cell(m.golden.detail));
    if (m.groups.empty()) continue;
    out += "| count | fork at token | text before the fork | main continues | this continues |\n|---:|---:|---|---|---|\n";
    out += absl::StrFormat("| %d | (main) | | `%s` | |\n", m.groups[0].count, cell(m.main_text()));
    for (size_t i = 1; i < m.groups.size() && i <= 20; ++i) {
      const CompletionGroup& g = m.groups[i];
      out += absl::StrFormat("| %d | %d | `%s` | `%s` | `%s` |\n", g.count, g.fork_position, cell(g.text_before),
                             cell(g.text_main), cell(g.text_this));
    }
    if (m.groups.size() > 21) out += absl::StrFormat("\n%d more completions not shown.\n", int(m.groups.size()) - 21);
    if (m.groups.size() > 1) out += "\nFork tree:\n\n```\n" + absl::StrReplaceAll(format_fork_tree(m), {{"`", "'"}}) + "```\n";
    const ModeExplanation* why = explained ? explained->find(m.mode) : nullptr;
    if (why && !why->items.empty()) {
      out += "\nWhy did it fork (`samebits explain`):\n\n";
      for (const Explanation& e : why->items) out += "- " + cell(explain_line(e)) + "\n";
    }
  }
  return out;
}

}  // namespace samebits
