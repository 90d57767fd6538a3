// Human and CI outputs of a run: the comparison table (stdout), a Markdown summary for a CI job
// page, JUnit XML for CI systems, and a progress line on stderr while a long run goes on.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>

#include "harness/golden/results.h"

namespace samebits {

// Mode, unique completions, unique logit streams, first token divergence, first logit divergence,
// golden status, tokens/s; then, per mode, the most common completions with their fork.
std::string format_table(const RunResults& results, int max_forks_shown = 5);
std::string format_markdown(const RunResults& results);
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
