#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "harness/report/report.h"

namespace samebits {
namespace {

// "45 s", "3 min 05 s".
std::string format_duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s < 60) return absl::StrFormat("%d s", s);
  return absl::StrFormat("%d min %02d s", s / 60, s % 60);
}

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0 && std::strcmp(v, "false") != 0;
}

}  // namespace

ProgressLine::ProgressLine(std::string label, bool enabled)
    : label_(std::move(label)), enabled_(enabled), start_(std::chrono::steady_clock::now()), last_(start_) {}

bool ProgressLine::wanted_on_stderr() {
  if (::isatty(STDERR_FILENO) != 1 || env_set("CI")) return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

std::string ProgressLine::format(const std::string& label, int done, int total, double elapsed_s) {
  std::string line = absl::StrFormat("[%s] %d/%d samples", label, done, total);
  if (total > 0) absl::StrAppendFormat(&line, " (%d%%)", int(100.0 * done / total));
  absl::StrAppendFormat(&line, ", %.1f s", elapsed_s);
  if (done > 0 && done < total && elapsed_s >= 1.0)
    absl::StrAppend(&line, ", about ", format_duration(elapsed_s * (total - done) / done), " left");
  return line;
}

void ProgressLine::update(int done, int total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (shown_ && done < total && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  shown_ = true;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  // \033[K clears what a longer previous line left behind.
  std::fprintf(stderr, "\r%s\033[K", format(label_, done, total, elapsed).c_str());
  std::fflush(stderr);
}

void ProgressLine::finish() {
  if (!enabled_ || !shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace samebits
