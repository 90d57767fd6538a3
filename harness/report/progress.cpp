#include <cstdio>

#include <unistd.h>

#include "absl/strings/str_format.h"
#include "harness/report/report.h"

namespace samebits {

ProgressLine::ProgressLine(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled), start_(std::chrono::steady_clock::now()), last_(start_) {}

bool ProgressLine::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

void ProgressLine::update(int done, int total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (shown_ && done < total && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  shown_ = true;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "\r[%s] %d/%d samples, %.1f s ", label_.c_str(), done, total, elapsed);
  std::fflush(stderr);
}

void ProgressLine::finish() {
  if (!enabled_ || !shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace samebits
