// What `samebits explain` found for one pair of samples (the main sample and one that diverged from
// it): the first (position, layer, op) whose output bits differ between the two, how large that
// difference was, how it grew through the layers to the logits, how close the top two logits were
// at the fork token, and the plan decisions that differed. Plain data: the explain module fills it,
// the reports (text, Markdown, HTML) print it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/mode.h"

namespace samebits {

// Largest differences between two outputs of the same op (ulp in the op's own type: bf16 or fp32).
struct ValueDifference {
  double max_abs = 0;
  int64_t max_ulp = 0;
  int64_t differing = 0;  // elements whose bits differ
  int64_t elements = 0;
};

// One row of the growth table: an op output at the first differing position (or a later one).
struct GrowthRow {
  std::string what;  // "layer 2 output", "final_norm", "logits"
  ValueDifference diff;
};

struct PlanDifference {
  std::string op;  // "q_proj", "attention", ...
  std::string main_plan, other_plan;
};

struct TopTwo {
  int32_t first = -1, second = -1;  // token ids, highest logit first (ties: lower id first)
  float first_logit = 0, second_logit = 0;
  float gap() const { return first_logit - second_logit; }
};

// How one sample's row at the first differing position was batched.
struct BatchContext {
  int64_t engine_step = -1;
  int64_t batch_tokens = 0;
  int batch_sequences = 0;
  int chunk_start = 0, chunk_tokens = 0;  // this request's part of the step
};

struct Explanation {
  Mode mode = Mode::kDefault;
  std::string why;  // "fork 1 of 2 (13 samples)", "first logit divergence"
  int main_sample = -1, other_sample = -1;
  uint64_t main_request = 0, other_request = 0;
  int completion = -1;          // the other sample's completion (index into ModeResult::groups)
  int fork_token = -1;          // first generated token that differs; -1 when the tokens agree
  int first_logit_step = -1;    // first generated token whose logits differ
  int prompt_tokens = 0;

  bool found = false;  // a differing op output was seen among the rows both samples computed
  int position = -1;   // absolute token position of the first difference
  int token_step = -1; // the generated token this position's logits produce; -1 inside the prompt
  int layer = -1;      // -1 embedding, num_layers for final_norm and logits
  int num_layers = 0;
  std::string op;
  ValueDifference diff;
  BatchContext main_batch, other_batch;
  std::string main_plan, other_plan;  // of the first differing op
  std::vector<PlanDifference> plans;  // every op at that position whose plan differed
  // The first difference whose effect reached a layer's output (the residual stream), when it is
  // not the first difference itself (that one was absorbed by rounding); "" otherwise.
  std::string reached_output;
  int growth_position = -1;           // the position whose logits differ first
  std::vector<GrowthRow> growth;      // the difference layer by layer there, up to the logits

  int top_step = -1;  // the fork token (or the first logit divergence when the tokens agree)
  TopTwo main_top, other_top;
  double top_step_logits_max_abs = 0;
  // Largest logit difference at each generated token from the first logit divergence to top_step.
  std::vector<std::pair<int, double>> logit_growth;
  std::vector<std::string> notes;  // prefix-cache hits, preemptions, rows not compared

  std::string where() const;       // "token 193 (position 225), layer 0, q_proj"
};

struct ModeExplanation {
  Mode mode = Mode::kDefault;
  std::vector<Explanation> items;
  std::string note;  // why nothing was explained ("one completion, one logit stream")
};

struct ExplainReport {
  std::vector<ModeExplanation> modes;
  const ModeExplanation* find(Mode m) const;
};

// "q_proj differs first at token 12 (position 43, layer 0): max |diff| 0.0039 (2 ulp)" — the
// one-line summary that the table, Markdown and HTML reports share.
std::string explain_line(const Explanation& e);
// The full text of one explanation (several lines), and of a whole report.
std::string format_explanation(const Explanation& e);
std::string format_explain_report(const ExplainReport& report);

}  // namespace samebits
