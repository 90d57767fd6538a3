#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "harness/golden/digest.h"
#include "harness/report/report.h"

namespace samebits {

bool invariance_holds(const ModeResult& m) {
  return m.mode != Mode::kInvariant || (m.unique_completions() == 1 && m.unique_logit_streams() == 1);
}

bool mode_passes(const ModeResult& m) { return invariance_holds(m) && m.golden.state != "mismatch"; }

namespace {

std::string position(int p) { return p < 0 ? "-" : absl::StrCat(p); }

std::string one_line(std::string text) {
  return absl::StrReplaceAll(text, {{"\n", "\\n"}, {"\r", "\\r"}, {"\t", " "}});
}

std::string golden_word(const GoldenStatus& g) { return g.state == "mismatch" ? "MISMATCH" : g.state; }

// Where the time went, per mode: set-up, steps (host vs waiting), and with --profile the backend
// time per op kind, largest first (by the first mode that has it).
std::string format_timing(const RunResults& r) {
  std::string out = "\ntiming:\n";
  for (const ModeResult& m : r.modes) {
    const RunFigures& f = m.figures;
    const double steps = double(std::max<int64_t>(f.engine_steps, 1));
    out += absl::StrFormat(
        "  %-9s set-up: weights %.2f s%s, KV cache %.2f s | run %.2f s, %d steps: host %.2f ms/step (%.2f before its first "
        "op or after its results, %d steps overlapped, %d scheduled ahead, %d rows discarded; schedule %.2f, issue %.2f, book %.2f ms/step), %.1f device waits/step (%.2f s waiting), %d steps from graphs (%d recorded) | "
        "host RSS %.2f GB (%.2f GB before the model, peak %.2f GB)\n",
        mode_name(m.mode), f.setup_weights_seconds,
        f.setup_weights_bytes > 0 && f.setup_weights_seconds > 0
            ? absl::StrFormat(" (%.2f GB at %.2f GB/s)", double(f.setup_weights_bytes) / 1e9,
                              double(f.setup_weights_bytes) / 1e9 / f.setup_weights_seconds)
            : std::string(),
        f.setup_kv_cache_seconds, f.wall_seconds, f.engine_steps,
        1e3 * (f.step_seconds - f.host_wait_seconds) / steps, 1e3 * f.host_idle_device_seconds / steps,
        f.overlapped_steps, f.scheduled_ahead_steps, f.discarded_rows, 1e3 * f.host_schedule_seconds / steps,
        1e3 * f.host_issue_seconds / steps, 1e3 * f.host_book_seconds / steps, double(f.host_waits) / steps, f.host_wait_seconds,
        f.graph_replays, f.graph_captures,
        double(f.host_peak_rss_bytes - f.host_rss_baseline_bytes) / 1e9, double(f.host_rss_baseline_bytes) / 1e9,
        double(f.host_peak_rss_bytes) / 1e9);
  }
  std::vector<std::string> kinds;
  for (const ModeResult& m : r.modes) {
    std::vector<RunFigures::OpFigure> ops = m.figures.op_times;
    std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
    for (const auto& op : ops)
      if (std::find(kinds.begin(), kinds.end(), op.kind) == kinds.end()) kinds.push_back(op.kind);
  }
  if (kinds.empty()) return out;
  out += absl::StrFormat("  time per op kind, seconds: backend | host issuing it (calls)\n  %-36s", "kind");
  for (const ModeResult& m : r.modes) out += absl::StrFormat(" %29s", mode_name(m.mode));
  out += "\n";
  for (const std::string& kind : kinds) {
    out += absl::StrFormat("  %-36s", kind);
    for (const ModeResult& m : r.modes) {
      auto it = std::find_if(m.figures.op_times.begin(), m.figures.op_times.end(),
                             [&](const auto& op) { return op.kind == kind; });
      out += it == m.figures.op_times.end()
                 ? absl::StrFormat(" %29s", "-")
                 : absl::StrFormat(" %9.3f | %7.3f (%7d)", it->seconds, it->host_seconds, it->calls);
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::string format_table(const RunResults& r, int max_forks_shown) {
  std::string out = absl::StrFormat("samebits run: %s, %d samples, backend %s, model %s%s\n", r.identity.scenario.name,
                                    r.identity.samples, r.identity.backend.id, r.identity.model.spec,
                                    r.identity.live ? ", live" : "");
  out += absl::StrFormat("%-10s %8s %8s %10s %10s %-15s %11s %8s\n", "mode", "unique", "unique", "1st token",
                         "1st logit", "golden", "tokens/s", "wall s");
  out += absl::StrFormat("%-10s %8s %8s %10s %10s %-15s %11s %8s\n", "", "compl.", "logits", "diverg.",
                         "diverg.", "", "", "");
  for (const ModeResult& m : r.modes) {
    out += absl::StrFormat("%-10s %8d %8d %10s %10s %-15s %11.0f %8.1f%s\n", mode_name(m.mode),
                           m.unique_completions(), m.unique_logit_streams(), position(m.earliest_token_divergence),
                           position(m.earliest_logit_divergence), golden_word(m.golden), m.tokens_per_second(),
                           m.figures.wall_seconds, invariance_holds(m) ? "" : "  <- NOT INVARIANT");
  }
  for (const ModeResult& m : r.modes) {
    if (m.golden.state != "pass" && !m.golden.detail.empty())
      out += absl::StrFormat("golden %s: %s: %s\n", mode_name(m.mode), golden_word(m.golden), m.golden.detail);
  }
  for (const ModeResult& m : r.modes) {
    if (m.groups.empty()) continue;
    out += absl::StrFormat("\n%s: %d of %d samples gave the main completion (%d logit streams)\n", mode_name(m.mode),
                           m.groups[0].count, m.samples, m.groups[0].logit_streams);
    for (size_t i = 1; i < m.groups.size() && int(i) <= max_forks_shown; ++i) {
      const CompletionGroup& g = m.groups[i];
      out += absl::StrFormat("  %4d x fork at token %3d: \"...%s\" -> main \"%s\" | this \"%s\"\n", g.count,
                             g.fork_position, one_line(g.text_before), one_line(g.text_main), one_line(g.text_this));
    }
    if (int(m.groups.size()) > max_forks_shown + 1)
      out += absl::StrFormat("  ... %d more completions\n", int(m.groups.size()) - 1 - max_forks_shown);
  }
  if (!r.modes.empty() && (r.modes[0].figures.engine_steps > 0)) out += format_timing(r);
  if (!r.modes.empty() && !r.modes[0].groups.empty())
    out += "\nmain completion (" + std::string(mode_name(r.modes[0].mode)) + "): \"" + one_line(r.modes[0].main_text()) + "\"\n";
  return out;
}

}  // namespace samebits
