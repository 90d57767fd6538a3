// Every file in tests/cli/bad_scenarios/ must be refused with exit code 2 and one line naming the
// file, the line, the field and the value. Each file's first line says what: "# expect: LINE: TEXT".
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "harness/scenario/scenario.h"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

namespace fs = std::filesystem;

struct BadCase {
  std::string file;      // relative to the source tree
  std::string expected;  // "path:LINE: TEXT"
};

std::vector<BadCase> bad_cases() {
  std::vector<BadCase> cases;
  const fs::path dir = fs::path(SAMEBITS_SOURCE_DIR) / "tests" / "cli" / "bad_scenarios";
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".yaml") continue;
    std::ifstream in(e.path());
    std::string first;
    std::getline(in, first);
    const std::string prefix = "# expect: ";
    const std::string rel = "tests/cli/bad_scenarios/" + e.path().filename().string();
    const std::string rest = first.rfind(prefix, 0) == 0 ? first.substr(prefix.size()) : "(no expect line)";
    const size_t colon = rest.find(": ");
    cases.push_back({rel, rel + ":" + rest.substr(0, colon) + ": " + rest.substr(colon + 2)});
  }
  std::sort(cases.begin(), cases.end(), [](const auto& a, const auto& b) { return a.file < b.file; });
  return cases;
}

TEST(BadScenarios, FolderHoldsTheCases) { EXPECT_GE(bad_cases().size(), 15u); }

TEST(BadScenarios, LoaderNamesFileLineFieldAndValue) {
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.file);
    auto s = load_scenario(std::string(SAMEBITS_SOURCE_DIR) + "/" + c.file);
    ASSERT_FALSE(s.ok());
    const std::string msg(s.status().message());
    EXPECT_NE(msg.find(c.expected.substr(c.file.size())), std::string::npos) << msg << "\nexpected: " << c.expected;
  }
}

TEST(BadScenarios, EveryCommandExitsTwoWithTheMessage) {
  for (const BadCase& c : bad_cases()) {
    for (const std::string cmd : {"run", "golden check", "golden update"}) {
      SCOPED_TRACE(cmd + " " + c.file);
      testing::Outcome o = testing::run_samebits(cmd + " " + c.file + " --golden-dir " + testing::temp_path("g"));
      EXPECT_EQ(o.code, 2);
      EXPECT_NE(o.err.find(c.expected), std::string::npos) << o.err << "\nexpected: " << c.expected;
      EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
      EXPECT_EQ(o.out, "");
    }
  }
}

}  // namespace
}  // namespace samebits
