// Human and CI outputs of a run: the comparison table (stdout), a Markdown summary for a CI job
// page, JUnit XML for CI systems, and a progress line on stderr while a long run goes on.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>

#include "harness/explain/explanation.h"
#include "harness/golden/results.h"

namespace samebits {

// Mode, unique completions, unique logit streams, first token divergence, first logit divergence,
// golden status, tokens/s; then, per mode, the most common completions with their fork.
std::string format_table(const RunResults& results, int max_forks_shown = 5);
// With `explained`, the Markdown gains each explanation's line and the HTML its explain table.
std::string format_markdown(const RunResults& results, const ExplainReport* explained = nullptr);
// One self-contained HTML page (inline CSS and SVG, no script needed, nothing fetched): per mode the
// counts and golden status, the fork tree, the histogram of first logit divergences, the explain
// table, the run identity.
std::string format_html(const RunResults& results, const ExplainReport* explained = nullptr);

// The completions of a mode as a tree: shared prefixes, where they split and how many samples
// take each branch. One node per branch; children ordered by count (desc).
struct ForkNode {
  int begin = 0, end = 0;  // tokens [begin, end) of this branch (end: where it splits again or ends)
  int count = 0;           // samples on this branch
  int completion = 0;      // a completion (index into groups) that follows this branch
  bool main = false;       // the main completion follows it
  std::vector<ForkNode> children;
};
ForkNode fork_tree(const ModeResult& mode);
// Text of tokens[begin, end) for the fork tree and the explain output. The results carry whole
// texts but not the tokenizer, so ranges are decoded as bytes: exact for the built-in byte-level
// checkpoint; for a BPE checkpoint only the byte-valued ids show.
std::string report_text(const std::vector<int32_t>& tokens, size_t begin, size_t end);
// The tree as indented text lines, text around each split shortened to `context` characters.
std::string format_fork_tree(const ModeResult& mode, int context = 32);
std::string format_junit(const RunResults& results);

// Whether a mode passes its gate: invariant mode must give one completion and one logit stream;
// any mode must not mismatch its golden.
bool invariance_holds(const ModeResult& mode);
bool mode_passes(const ModeResult& mode);

// "\r[default] 120/1000 samples (12%), 14.2 s, about 1 min 44 s left" on stderr, at most every
// 200 ms, only when enabled. The time left is the elapsed time scaled by the samples still to come;
// it is shown once a sample is done and a second has passed.
class ProgressLine {
 public:
  explicit ProgressLine(std::string label, bool enabled);
  // Whether a progress line belongs on stderr: a terminal, not a dumb one, and not a CI job (CI
  // set; CI logs keep every carriage-return update as a line).
  static bool wanted_on_stderr();
  void update(int done, int total);
  void finish();  // clears the line
  ~ProgressLine() { finish(); }

  // The line's text (without the carriage return), for elapsed seconds.
  static std::string format(const std::string& label, int done, int total, double elapsed_s);

 private:
  std::string label_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace samebits
