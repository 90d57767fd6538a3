// The HTML report: one self-contained page (inline CSS and SVG; no script, no fetched resource), so
// it opens from a CI artifact or a mail attachment and every number is text in the page.
#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "harness/golden/digest.h"
#include "harness/golden/run_identity.h"
#include "harness/report/report.h"

namespace samebits {
namespace {

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string shown(const std::string& text) { return "<q>" + esc(text) + "</q>"; }
std::string position(int p) { return p < 0 ? "none" : absl::StrCat(p); }
std::string number(double v) { return absl::StrFormat("%.3g", v); }

constexpr char kStyle[] = R"css(
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#1b1f24;background:#fff}
h1{font-size:1.6em;margin-bottom:.2em} h2{margin-top:1.6em;border-bottom:1px solid #d0d7de;padding-bottom:.2em} h3{margin-top:1.2em}
.verdict{display:inline-block;padding:.1em .6em;border-radius:.3em;color:#fff;font-weight:600}
.pass{background:#1a7f37} .fail{background:#cf222e}
table{border-collapse:collapse;margin:.6em 0} th,td{border:1px solid #d0d7de;padding:.25em .6em;vertical-align:top;text-align:left}
th{background:#f6f8fa} td.n{text-align:right;font-variant-numeric:tabular-nums}
q{font-family:ui-monospace,Menlo,Consolas,monospace;background:#f6f8fa;quotes:none;white-space:pre-wrap}
ul.tree,ul.tree ul{list-style:none;margin:0;padding-left:1.4em} ul.tree{padding-left:0}
ul.tree li{position:relative;padding:.15em 0 .15em .9em;border-left:2px solid #8c959f}
ul.tree li:last-child{border-left-color:transparent}
ul.tree li::before{content:"";position:absolute;left:-2px;top:0;width:.8em;height:1em;border-left:2px solid #8c959f;border-bottom:2px solid #8c959f}
ul.tree>li{border:0;padding-left:0} ul.tree>li::before{display:none}
.count{font-weight:600} .main{color:#1a7f37;font-weight:600} .at{color:#57606a}
pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font-size:.9em}
svg text{font:11px system-ui,sans-serif;fill:#57606a} .bar{fill:#0969da}
dl.id{display:grid;grid-template-columns:max-content auto;gap:.2em 1em} dl.id dt{font-weight:600} dl.id dd{margin:0}
)css";

void fork_tree_html(const ModeResult& m, const ForkNode& n, bool root, std::string* out) {
  const auto& tokens = m.groups[size_t(n.completion)].tokens;
  *out += "<li>";
  *out += absl::StrCat("<span class=\"count\">", n.count, n.count == 1 ? " sample" : " samples", "</span>");
  if (n.main) *out += " <span class=\"main\">main</span>";
  if (root) {
    const int from = std::max(0, n.end - 60);
    *out += absl::StrCat(" <span class=\"at\">share tokens 0&ndash;", n.end - 1, "</span> ",
                         shown((from > 0 ? "…" : "") + report_text(tokens, size_t(from), size_t(n.end))));
  } else if (n.begin >= int(tokens.size())) {
    *out += absl::StrCat(" <span class=\"at\">at token ", n.begin, "</span> (end of completion)");
  } else {
    const int to = std::min(n.end, n.begin + 60);
    *out += absl::StrCat(" <span class=\"at\">at token ", n.begin, "</span> ",
                         shown(report_text(tokens, size_t(n.begin), size_t(to)) + (to < n.end ? "…" : "")));
  }
  if (!n.children.empty()) {
    *out += "<ul>";
    for (const ForkNode& c : n.children) fork_tree_html(m, c, false, out);
    *out += "</ul>";
  }
  *out += "</li>\n";
}

// Bars of samples per first-logit-divergence step (bins of equal width), then the same as a table.
void histogram_html(const ModeResult& m, std::string* out) {
  int max_step = -1, none = 0;
  for (const SampleSummary& s : m.per_sample) {
    max_step = std::max(max_step, s.first_logit_divergence);
    none += s.first_logit_divergence < 0;
  }
  if (max_step < 0) {
    *out += absl::StrCat("<p>Every sample's logits match the main stream at every token (", none, " samples).</p>\n");
    return;
  }
  const int bins = std::min(max_step + 1, 40), width = (max_step + 1 + bins - 1) / bins;
  std::vector<int> count(size_t(bins), 0);
  for (const SampleSummary& s : m.per_sample)
    if (s.first_logit_divergence >= 0) ++count[size_t(s.first_logit_divergence / width)];
  const int top = *std::max_element(count.begin(), count.end());
  const int W = 640, H = 160, left = 40, bottom = 20, bar = (W - left) / bins;
  *out += absl::StrFormat("<svg role=\"img\" aria-label=\"first logit divergence histogram\" width=\"%d\" height=\"%d\" "
                          "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n", W, H + bottom, W, H + bottom);
  *out += absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#8c959f\"/>\n", left, H, W, H);
  *out += absl::StrFormat("<text x=\"0\" y=\"12\">%d</text><text x=\"0\" y=\"%d\">0</text>\n", top, H);
  for (int b = 0; b < bins; ++b) {
    const int h = top > 0 ? int(double(count[size_t(b)]) * (H - 10) / top + 0.5) : 0;
    const std::string label = width == 1 ? absl::StrCat("token ", b) : absl::StrCat("tokens ", b * width, "-", b * width + width - 1);
    *out += absl::StrFormat("<rect class=\"bar\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"><title>%s: %d samples</title></rect>\n",
                            left + b * bar + 1, H - h, std::max(1, bar - 2), h, label, count[size_t(b)]);
    if (b % std::max(1, bins / 8) == 0)
      *out += absl::StrFormat("<text x=\"%d\" y=\"%d\">%d</text>\n", left + b * bar, H + 14, b * width);
  }
  *out += "</svg>\n<table><tr><th>first logit divergence at token</th><th>samples</th></tr>\n";
  for (int b = 0; b < bins; ++b) {
    if (count[size_t(b)] == 0) continue;
    const std::string label = width == 1 ? absl::StrCat(b) : absl::StrCat(b * width, "&ndash;", b * width + width - 1);
    *out += absl::StrFormat("<tr><td class=\"n\">%s</td><td class=\"n\">%d</td></tr>\n", label, count[size_t(b)]);
  }
  *out += absl::StrFormat("<tr><td>none</td><td class=\"n\">%d</td></tr></table>\n", none);
}

std::string difference_html(const ValueDifference& d) {
  if (d.differing == 0) return "equal";
  return absl::StrFormat("%s <span class=\"at\">(%d ulp, %d/%d values)</span>", number(d.max_abs), d.max_ulp, d.differing,
                         d.elements);
}

std::string token_html(int32_t id) { return id < 0 ? "?" : shown(report_text({id}, 0, 1)); }

void explain_html(const ModeExplanation& x, std::string* out) {
  if (x.items.empty()) {
    *out += "<p>" + esc(x.note) + "</p>\n";
    return;
  }
  *out += "<table class=\"explain\"><tr><th>divergence</th><th>samples (main vs other)</th><th>first differing op</th>"
          "<th>max |diff|</th><th>plans that differed</th><th>growth to the logits</th><th>top-2 at the fork token</th></tr>\n";
  for (const Explanation& e : x.items) {
    std::string plans;
    for (const PlanDifference& p : e.plans)
      plans += absl::StrCat("<div><b>", esc(p.op), "</b>: ", esc(p.main_plan), " vs ", esc(p.other_plan), "</div>");
    if (plans.empty()) plans = e.found ? "none" : "";
    std::string growth;
    for (const GrowthRow& g : e.growth) growth += absl::StrCat("<div>", esc(g.what), ": ", difference_html(g.diff), "</div>");
    std::string top;
    if (e.main_top.first >= 0) {
      top = absl::StrFormat("token %d%s<div>main: %s %.6g vs %s %.6g, gap <b>%s</b></div><div>other: %s %.6g vs %s %.6g, gap <b>%s</b></div>",
                            e.top_step, e.fork_token >= 0 ? " (fork)" : "", token_html(e.main_top.first), e.main_top.first_logit,
                            token_html(e.main_top.second), e.main_top.second_logit, number(e.main_top.gap()),
                            token_html(e.other_top.first), e.other_top.first_logit, token_html(e.other_top.second),
                            e.other_top.second_logit, number(e.other_top.gap()));
    }
    *out += absl::StrFormat("<tr><td>%s</td><td class=\"n\">%d vs %d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
                            esc(e.why), e.main_sample, e.other_sample, e.found ? esc(e.where()) : "not found",
                            e.found ? difference_html(e.diff) : "", plans, growth, top);
  }
  *out += "</table>\n<details><summary>full explain output</summary><pre>";
  for (const Explanation& e : x.items) *out += esc(format_explanation(e));
  *out += "</pre></details>\n";
}

}  // namespace

std::string format_html(const RunResults& r, const ExplainReport* explained) {
  bool all_pass = true;
  for (const auto& m : r.modes) all_pass = all_pass && mode_passes(m);
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += absl::StrCat("<title>samebits: ", esc(r.identity.scenario.name), "</title>\n<style>", kStyle, "</style></head><body>\n");
  out += absl::StrFormat("<h1>samebits: %s <span class=\"verdict %s\">%s</span></h1>\n", esc(r.identity.scenario.name),
                         all_pass ? "pass" : "fail", all_pass ? "passed" : "FAILED");
  out += absl::StrFormat("<p>%d samples on backend <b>%s</b>, model <b>%s</b>, %s schedule.</p>\n", r.identity.samples, esc(r.identity.backend.id),
                         esc(r.identity.model.spec), r.identity.live ? "live" : "seeded");

  out += "<h2>Summary</h2>\n<table><tr><th>mode</th><th>unique completions</th><th>unique logit streams</th>"
         "<th>first token divergence</th><th>first logit divergence</th><th>samples diverged (tokens / logits)</th>"
         "<th>golden</th><th>tokens/s</th><th>wall s</th></tr>\n";
  for (const ModeResult& m : r.modes) {
    out += absl::StrFormat("<tr id=\"summary-%s\"><td>%s</td><td class=\"n\">%d</td><td class=\"n\">%d</td><td class=\"n\">%s</td>"
                           "<td class=\"n\">%s</td><td class=\"n\">%d / %d</td><td>%s%s</td><td class=\"n\">%.0f</td><td class=\"n\">%.1f</td></tr>\n",
                           mode_name(m.mode), mode_name(m.mode), m.unique_completions(), m.unique_logit_streams(),
                           position(m.earliest_token_divergence), position(m.earliest_logit_divergence),
                           m.samples_token_diverged, m.samples_logit_diverged, esc(m.golden.state),
                           m.golden.detail.empty() ? "" : "<div class=\"at\">" + esc(m.golden.detail) + "</div>",
                           m.tokens_per_second(), m.figures.wall_seconds);
  }
  out += "</table>\n";

  for (const ModeResult& m : r.modes) {
    out += absl::StrFormat("<h2 id=\"mode-%s\">%s mode</h2>\n", mode_name(m.mode), mode_name(m.mode));
    if (m.groups.empty()) continue;
    out += absl::StrFormat("<h3>Fork tree</h3>\n<p>%d of %d samples gave the main completion; %d completion(s) in all.</p>\n",
                           m.groups[0].count, m.samples, m.unique_completions());
    out += "<ul class=\"tree\">\n";
    fork_tree_html(m, fork_tree(m), true, &out);
    out += "</ul>\n";
    if (m.groups.size() > 1) {
      out += "<table><tr><th>samples</th><th>fork at token</th><th>text before the fork</th><th>main continues</th><th>this continues</th></tr>\n";
      for (size_t i = 1; i < m.groups.size() && i <= 20; ++i) {
        const CompletionGroup& g = m.groups[i];
        out += absl::StrFormat("<tr><td class=\"n\">%d</td><td class=\"n\">%d</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", g.count,
                               g.fork_position, shown(g.text_before), shown(g.text_main), shown(g.text_this));
      }
      out += "</table>\n";
    }
    out += "<h3>First logit divergence</h3>\n";
    histogram_html(m, &out);
    out += "<h3>Why did it fork?</h3>\n";
    const ModeExplanation* x = explained ? explained->find(m.mode) : nullptr;
    if (x) explain_html(*x, &out);
    else out += "<p>Not explained in this report (<code>samebits explain RESULTS.json</code> or <code>run --explain</code>).</p>\n";
  }

  out += "<h2>Run identity</h2>\n<dl class=\"id\">\n";
  auto item = [&](const std::string& k, const std::string& v) { out += "<dt>" + esc(k) + "</dt><dd>" + esc(v) + "</dd>\n"; };
  // Every field of the run identity (harness/golden/run_identity.h), flattened.
  std::function<void(const std::string&, const nlohmann::json&)> flatten = [&](const std::string& key, const nlohmann::json& v) {
    if (v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it) flatten(key.empty() ? it.key() : key + "." + it.key(), it.value());
    } else {
      item(key, v.is_string() ? v.get<std::string>() : v.dump());
    }
  };
  flatten("", identity_to_json(r.identity));
  for (const ModeResult& m : r.modes)
    item(std::string(mode_name(m.mode)) + " schedule digest", digest_hex(m.figures.schedule_digest));
  out += "</dl>\n</body></html>\n";
  return out;
}

}  // namespace samebits
