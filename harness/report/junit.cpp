#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "harness/report/report.h"

namespace samebits {
namespace {

std::string xml(const std::string& text) {
  std::string out;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (u < 0x20 && c != '\n' && c != '\t') out += '?';  // not allowed in XML 1.0
        else out += c;
    }
  }
  return out;
}

struct Case {
  std::string name;
  double time = 0;
  std::string failure;  // empty = pass
  std::string skipped;  // non-empty = skipped
};

}  // namespace

std::string format_junit(const RunResults& r) {
  std::vector<Case> cases;
  double total_time = 0;
  for (const ModeResult& m : r.modes) {
    const std::string mode(mode_name(m.mode));
    total_time += m.figures.wall_seconds;
    if (m.mode == Mode::kInvariant) {
      Case c{mode + ".invariance", m.figures.wall_seconds, "", ""};
      if (!invariance_holds(m))
        c.failure = absl::StrFormat("%d unique completions and %d unique logit streams (expected 1 and 1); first "
                                    "token divergence %d, first logit divergence %d",
                                    m.unique_completions(), m.unique_logit_streams(), m.earliest_token_divergence,
                                    m.earliest_logit_divergence);
      cases.push_back(c);
    }
    Case g{mode + ".golden", 0, "", ""};
    if (m.golden.state == "mismatch") g.failure = m.golden.detail;
    else if (m.golden.state != "pass") g.skipped = m.golden.state + ": " + m.golden.detail;
    cases.push_back(g);
  }
  int failures = 0, skipped = 0;
  for (const auto& c : cases) {
    failures += !c.failure.empty();
    skipped += !c.skipped.empty();
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += absl::StrFormat("<testsuites name=\"samebits\" tests=\"%d\" failures=\"%d\" skipped=\"%d\" time=\"%.3f\">\n",
                         cases.size(), failures, skipped, total_time);
  out += absl::StrFormat("  <testsuite name=\"%s.%s\" tests=\"%d\" failures=\"%d\" skipped=\"%d\" time=\"%.3f\">\n",
                         xml(r.identity.scenario.name), xml(r.identity.backend.id), cases.size(), failures, skipped, total_time);
  for (const auto& c : cases) {
    out += absl::StrFormat("    <testcase classname=\"%s\" name=\"%s\" time=\"%.3f\"", xml(r.identity.scenario.name), xml(c.name), c.time);
    if (!c.failure.empty()) {
      out += absl::StrFormat(">\n      <failure message=\"%s\"/>\n    </testcase>\n", xml(c.failure));
    } else if (!c.skipped.empty()) {
      out += absl::StrFormat(">\n      <skipped message=\"%s\"/>\n    </testcase>\n", xml(c.skipped));
    } else {
      out += "/>\n";
    }
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace samebits
