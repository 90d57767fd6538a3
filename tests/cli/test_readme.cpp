// README.md's table of what the main command shows (the Feynman experiment, both modes, CPU and
// H200) against the goldens it quotes (golden/feynman/<backend>.json): unique completions, the
// sample counts of the main completion and of each fork, unique logit streams and the first token
// divergence. The goldens change with the kernels' bits (a kernel set version); this keeps the
// README's figures from staying behind.
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

using nlohmann::json;
using testing::read_text;

struct Row {
  std::string backend_id, mode, completions, streams, divergence;
};

// The table's rows: | backend | mode | unique completions | unique logit streams | first token divergence |
std::vector<Row> readme_rows(const std::string& readme) {
  static const std::regex kRow(R"(^\| (cpu|cuda-sm90 \(H200\)) \| (default|invariant) \| (.*) \| (\d+) \| (.*) \|$)");
  std::vector<Row> rows;
  std::istringstream lines(readme);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, kRow)) continue;
    rows.push_back({m[1] == "cpu" ? "cpu" : "cuda-sm90", m[2], m[3], m[4], m[5]});
  }
  return rows;
}

// The sample counts in "N (a "…", b "…", ...)": N, then a, b, ... (the counts before each quote).
std::vector<int> counts(const std::string& cell) {
  std::vector<int> out{std::stoi(cell)};
  static const std::regex kCount(R"((?:\(|, )(\d+) (?:main )?")");
  for (std::sregex_iterator it(cell.begin(), cell.end(), kCount), end; it != end; ++it) {
    out.push_back(std::stoi((*it)[1]));
  }
  return out;
}

TEST(Readme, MainCommandTableMatchesTheFeynmanGoldens) {
  const std::vector<Row> rows = readme_rows(read_text(std::string(SAMEBITS_SOURCE_DIR) + "/README.md"));
  ASSERT_EQ(rows.size(), 4u) << "README.md: the table of what the main command shows (4 rows) was not found";
  for (const Row& row : rows) {
    SCOPED_TRACE(row.backend_id + " " + row.mode);
    const std::string path = std::string(SAMEBITS_SOURCE_DIR) + "/golden/feynman/" + row.backend_id + ".json";
    const json golden = json::parse(read_text(path));
    const json& mode = golden.at("modes").at(row.mode);
    const json& forks = mode.at("fork_statistics");
    const int samples = mode.at("samples").get<int>();
    const std::vector<int> quoted = counts(row.completions);
    EXPECT_EQ(quoted[0], mode.at("unique_completions").get<int>()) << path;
    if (quoted.size() > 1) {  // the main completion's samples, then each fork's, in the golden's order
      std::vector<int> expected{samples - forks.at("samples_token_diverged").get<int>()};
      for (const json& f : forks.at("forks")) expected.push_back(f.at("count").get<int>());
      EXPECT_EQ(std::vector<int>(quoted.begin() + 1, quoted.end()), expected) << row.completions;
    }
    EXPECT_EQ(std::stoi(row.streams), mode.at("unique_logit_streams").get<int>()) << path;
    const int first = forks.at("first_token_divergence").get<int>();
    EXPECT_EQ(row.divergence, first < 0 ? "none" : "byte " + std::to_string(first)) << path;
  }
}

// The parser itself: the counts of a cell, main marked or not.
TEST(Readme, CountsReadEverySampleCountOfACell) {
  EXPECT_EQ(counts(R"(5 (967 main "…earned", 20 "Queens", 1 "…studied"))"), (std::vector<int>{5, 967, 20, 1}));
  EXPECT_EQ(counts(R"(1 ("…in Queens, New York"))"), (std::vector<int>{1}));
  EXPECT_EQ(counts("1"), (std::vector<int>{1}));
}

}  // namespace
}  // namespace samebits
