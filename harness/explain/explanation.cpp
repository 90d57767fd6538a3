// Text forms of explanations: the one-line summary shared by every report and the full block
// printed by `samebits explain` and `run --explain`.
#include "harness/explain/explanation.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "harness/golden/results.h"
#include "models/tiny_qwen/tokenizer.h"

namespace samebits {
namespace {

std::string token_text(int32_t id) {
  if (id < 0) return "?";
  std::string t = decode_text(ByteTokenizer(), {id}, 0, 1);  // byte-level, as report_text
  return absl::StrCat("'", absl::StrReplaceAll(t, {{"\n", "\\n"}}), "'");
}

std::string number(double v) { return absl::StrFormat("%.3g", v); }

std::string difference(const ValueDifference& d) {
  if (d.differing == 0) return "equal";
  return absl::StrFormat("%s (%d ulp, %d of %d values)", number(d.max_abs), d.max_ulp, d.differing, d.elements);
}

std::string batch(const BatchContext& b, int prompt_tokens) {
  if (b.engine_step < 0) return "not seen";
  const std::string part = b.chunk_tokens == 1 && b.chunk_start >= prompt_tokens
                               ? absl::StrCat("decode at position ", b.chunk_start)
                               : absl::StrCat("prefill chunk of ", b.chunk_tokens, " from position ", b.chunk_start);
  return absl::StrFormat("engine step %d, batch of %d tokens in %d sequences, %s", b.engine_step, b.batch_tokens,
                         b.batch_sequences, part);
}

std::string top(const TopTwo& t) {
  return absl::StrFormat("%s %.6g vs %s %.6g (gap %s)", token_text(t.first), t.first_logit, token_text(t.second),
                         t.second_logit, number(t.gap()));
}

}  // namespace

const ModeExplanation* ExplainReport::find(Mode m) const {
  for (const auto& e : modes)
    if (e.mode == m) return &e;
  return nullptr;
}

std::string Explanation::where() const {
  const std::string layer_text = layer < 0 ? "embedding" : layer >= num_layers ? "final" : absl::StrCat("layer ", layer);
  const std::string at = token_step >= 0 ? absl::StrCat("token ", token_step, " (position ", position, ")")
                                         : absl::StrCat("prompt position ", position);
  return absl::StrCat(at, ", ", layer_text, ", ", op);
}

std::string explain_line(const Explanation& e) {
  std::string line = absl::StrCat(std::string(mode_name(e.mode)), " ", e.why, ", samples ", e.main_sample, " vs ",
                                  e.other_sample, ": ");
  if (!e.found) {
    line += "no differing op output found";
  } else {
    line += absl::StrCat("first differs at ", e.where(), ", max |diff| ", number(e.diff.max_abs), " (", e.diff.max_ulp,
                         " ulp)");
    if (e.main_plan != e.other_plan) line += absl::StrCat("; plan ", e.main_plan, " vs ", e.other_plan);
  }
  if (e.main_top.first >= 0) {
    line += absl::StrCat("; at token ", e.top_step, e.fork_token >= 0 ? " (the fork)" : "", " top-2 gap ",
                         number(e.main_top.gap()), " main / ", number(e.other_top.gap()), " other");
  }
  return line;
}

std::string format_explanation(const Explanation& e) {
  std::string out = absl::StrFormat("%s mode, %s\n", mode_name(e.mode), e.why);
  out += absl::StrFormat("  samples %d (main, request %d) vs %d (request %d); ", e.main_sample, e.main_request,
                         e.other_sample, e.other_request);
  out += e.fork_token >= 0 ? absl::StrCat("tokens fork at ", e.fork_token) : std::string("tokens agree");
  out += absl::StrCat(", logits first differ at token ", e.first_logit_step, "\n");
  if (e.found) {
    out += absl::StrCat("  first difference: ", e.where(), ": max |diff| ", difference(e.diff), "\n");
    out += absl::StrCat("    main:  ", batch(e.main_batch, e.prompt_tokens), e.main_plan.empty() ? "" : "; plan " + e.main_plan, "\n");
    out += absl::StrCat("    other: ", batch(e.other_batch, e.prompt_tokens), e.other_plan.empty() ? "" : "; plan " + e.other_plan, "\n");
    if (e.plans.empty()) {
      out += "  plans at that position: all the same\n";
    } else {
      out += "  plans that differed at that position:\n";
      for (const PlanDifference& p : e.plans) out += absl::StrFormat("    %-20s %s vs %s\n", p.op, p.main_plan, p.other_plan);
    }
    if (!e.reached_output.empty()) out += "  first difference to reach a layer output: " + e.reached_output + "\n";
  }
  if (!e.growth.empty()) {
    out += absl::StrFormat("  growth layer by layer at position %d (token %d, the first logit divergence), max |diff|:\n",
                           e.growth_position, e.growth_position - (e.prompt_tokens - 1));
    for (const GrowthRow& g : e.growth) out += absl::StrFormat("    %-40s %s\n", g.what, difference(g.diff));
  }
  if (!e.logit_growth.empty()) {
    std::vector<std::string> steps;
    const size_t n = e.logit_growth.size();
    for (size_t i = 0; i < n; ++i) {
      if (n > 8 && i == 4) steps.push_back("...");
      if (n > 8 && i >= 4 && i + 4 < n) continue;
      steps.push_back(absl::StrCat(e.logit_growth[i].first, ": ", number(e.logit_growth[i].second)));
    }
    out += absl::StrCat("  logits max |diff| by token: ", absl::StrJoin(steps, ", "), "\n");
  }
  if (e.main_top.first >= 0) {
    out += absl::StrFormat("  at token %d%s: main top-2 %s; other top-2 %s\n", e.top_step,
                           e.fork_token >= 0 ? " (the fork)" : "", top(e.main_top), top(e.other_top));
  }
  for (const std::string& n : e.notes) out += "  note: " + n + "\n";
  return out;
}

std::string format_explain_report(const ExplainReport& report) {
  std::string out = "\nwhy did it fork?\n";
  for (const ModeExplanation& m : report.modes) {
    if (m.items.empty()) {
      out += absl::StrFormat("%s mode: %s\n", mode_name(m.mode), m.note);
      continue;
    }
    for (const Explanation& e : m.items) out += format_explanation(e);
  }
  return out;
}

}  // namespace samebits
