// Hostile inputs to the shared readers and writers, each built from an input that once crashed,
// wrapped or was silently accepted: numbers beyond int64 / double, deep nesting, repeated keys,
// non-regular and oversized files, counts that wrapped, control characters echoed in errors, and
// all-or-nothing output with stale temporaries cleaned.
#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include "common/input_file.h"
#include "common/output_files.h"
#include "gtest/gtest.h"
#include "harness/golden/golden_store.h"
#include "harness/golden/results.h"
#include "harness/report/report.h"
#include "tests/golden/synthetic_results.h"

namespace samebits {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("samebits_hostile_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_text(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

struct JsonCase {
  std::string name, text, expect;
};
void PrintTo(const JsonCase& c, std::ostream* os) { *os << c.name; }

class JsonLimits : public ::testing::TestWithParam<JsonCase> {};

TEST_P(JsonLimits, OneLineErrorNoException) {
  json j;
  absl::Status s = parse_json_text(GetParam().text, "in.json", &j);
  ASSERT_FALSE(s.ok());
  const std::string m(s.message());
  EXPECT_EQ(m.rfind("in.json: (syntax): ", 0), 0u) << m;
  EXPECT_NE(m.find(GetParam().expect), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

INSTANTIATE_TEST_SUITE_P(
    Hostile, JsonLimits,
    ::testing::Values(JsonCase{"double_overflow", R"({"samples": 1e309})", "out of range"},
                      JsonCase{"u64_max", R"({"samples": 18446744073709551615})", "out of range"},
                      JsonCase{"above_i64", R"([9223372036854775808])", "out of range"},
                      JsonCase{"deep", std::string(200, '[') + std::string(200, ']'), "nested deeper"},
                      JsonCase{"repeated_key", R"({"a": 1, "b": {"c": 2, "c": 3}})", "'c' appears twice"},
                      JsonCase{"syntax", R"({"a": )", "not valid JSON"}),
    [](const auto& info) { return info.param.name; });

TEST(JsonLimits, AcceptsTheExtremesThatFit) {
  json j;
  ASSERT_TRUE(parse_json_text(R"({"a": 9223372036854775807, "b": -9223372036854775808, "c": 1e308,
                                  "d": [{"a": 1}, {"a": 2}]})", "ok.json", &j).ok());
  EXPECT_EQ(j["a"].get<int64_t>(), INT64_MAX);
  EXPECT_EQ(j["b"].get<int64_t>(), INT64_MIN);
}

TEST(InputFiles, NonRegularAndOversizedFilesAreRejectedUnread) {
  const fs::path dir = fresh_dir("files");
  std::string text;
  for (const std::string& p : {std::string("/dev/zero"), std::string("/dev/urandom"), dir.string()}) {
    absl::Status s = read_input_file(p, kMaxTextInputBytes, &text);
    EXPECT_EQ(std::string(s.message()), p + ": is not a regular file");
  }
  const fs::path fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(std::string(read_input_file(fifo, kMaxTextInputBytes, &text).message()).find("not a regular file"),
            std::string::npos);
  const fs::path big = dir / "big.json";
  write_text(big, "");
  fs::resize_file(big, uint64_t(kMaxTextInputBytes) + 1);  // sparse: nothing is written
  absl::Status s = read_input_file(big, kMaxTextInputBytes, &text);
  EXPECT_NE(std::string(s.message()).find("is over the limit of 268435456 bytes"), std::string::npos) << s;
  json j;
  EXPECT_FALSE(read_json_input(big, &j).ok());
  fs::remove_all(dir);
}

TEST(InputFiles, ErrorsShowControlCharactersEscaped) {
  EXPECT_EQ(printable(std::string("a\0b\x1b[31mc\n", 10)), "a\\x00b\\x1b[31mc\\x0a");
  json j;
  absl::Status s = parse_json_text(R"({"key": "x", "key": 1})", std::string("bad\x07name.json"), &j);
  EXPECT_EQ(std::string(s.message()).rfind("bad\\x07name.json: ", 0), 0u) << s;
}

TEST(GoldenReader, ExpectedCountBeyondInt32IsAnErrorNotAWrap) {
  const fs::path dir = fresh_dir("golden_count");
  const std::string path = (dir / "g.json").string();
  json g = golden_to_json(golden_from_results(testing::synthetic_results(4, {})));
  auto& expected = g["modes"]["default"]["expected"];
  ASSERT_FALSE(expected.empty());
  expected.begin().value() = (int64_t(1) << 32) + 2;  // once read as 2
  write_text(path, g.dump());
  auto back = read_golden(path);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(std::string(back.status().message()).find("is not a count in [1, 2^31-1]"), std::string::npos)
      << back.status();
  fs::remove_all(dir);
}

TEST(GoldenReader, NumberBeyondDoubleIsAnError) {
  const fs::path dir = fresh_dir("golden_1e309");
  const std::string path = (dir / "g.json").string();
  std::string text = golden_to_json(golden_from_results(testing::synthetic_results(4, {}))).dump();
  const size_t at = text.find("\"samples\":") + 10;
  text.replace(at, text.find_first_of(",}", at) - at, "1e309");
  write_text(path, text);
  auto back = read_golden(path);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(std::string(back.status().message()).find("out of range"), std::string::npos) << back.status();
  fs::remove_all(dir);
}

TEST(ResultsReader, TokenIdBeyondInt32IsAnError) {
  json r = results_to_json(testing::synthetic_results(4, {{1, 2}}));
  r["modes"][0]["completions"][0]["tokens"][0] = int64_t(1) << 32;
  auto back = results_from_json(r, "r.json");
  ASSERT_FALSE(back.ok());
  EXPECT_NE(std::string(back.status().message()).find("is not a token id"), std::string::npos) << back.status();
}

// Found by fuzz_results: two completions with the same tokens sent the fork tree's split into
// endless recursion (stack overflow in `samebits compare`).
TEST(ResultsReader, RepeatedCompletionIsAnError) {
  json r = results_to_json(testing::synthetic_results(4, {{1, 2}}));
  json& completions = r["modes"][0]["completions"];
  ASSERT_GE(completions.size(), 2u);
  completions[1]["tokens"] = completions[0]["tokens"];
  auto back = results_from_json(r, "r.json");
  ASSERT_FALSE(back.ok());
  EXPECT_NE(std::string(back.status().message()).find("completions[1].tokens: the same tokens as completions[0]"),
            std::string::npos)
      << back.status();
}

TEST(ForkTree, IdenticalCompletionsEndTheSplit) {
  RunResults r = testing::synthetic_results(4, {{1, 2}});
  ModeResult& m = r.modes[0];
  ASSERT_GE(m.groups.size(), 2u);
  m.groups[1].tokens = m.groups[0].tokens;
  const ForkNode root = fork_tree(m);  // ended in a stack overflow before
  EXPECT_TRUE(root.children.empty());
  EXPECT_EQ(root.count, m.groups[0].count + m.groups[1].count);
}

TEST(ResultsWriter, InvalidUtf8TextIsReplacedNotThrown) {
  RunResults r = testing::synthetic_results(2, {});
  r.modes[0].groups[0].text_main = "caf\xc3";  // generated bytes need not be UTF-8
  const fs::path dir = fresh_dir("utf8");
  ASSERT_TRUE(write_results_file(r, (dir / "r.json").string()).ok());
  auto back = read_results_file((dir / "r.json").string());
  ASSERT_TRUE(back.ok()) << back.status();
  fs::remove_all(dir);
}

TEST(OutputFiles, NothingReachesATargetUntilCommit) {
  const fs::path dir = fresh_dir("staged");
  {
    OutputFiles out;
    ASSERT_TRUE(out.stage((dir / "a.json").string(), "a").ok());
    ASSERT_TRUE(out.stage((dir / "b.md").string(), "b").ok());
    EXPECT_FALSE(fs::exists(dir / "a.json"));
    // A later output that cannot be written: its parent is a file.
    write_text(dir / "plain", "x");
    EXPECT_FALSE(out.stage((dir / "plain" / "c.xml").string(), "c").ok());
  }  // dropped without commit
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().filename() != "plain";
  EXPECT_EQ(files, 0) << "a failed command left files behind";
  OutputFiles out;
  ASSERT_TRUE(out.stage((dir / "a.json").string(), "a").ok());
  ASSERT_TRUE(out.commit().ok());
  std::ifstream in(dir / "a.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "a");
  fs::remove_all(dir);
}

TEST(OutputFiles, StaleTemporariesOfDeadWritersAreRemoved) {
  const fs::path dir = fresh_dir("stale");
  const std::string target = (dir / "cpu.json").string();
  // A writer killed between write and rename: a pid that is not running (above pid_max).
  write_text(target + ".tmp.2147483646", "half");
  // A live writer's temporary (this process's parent) is left alone.
  const std::string live = target + ".tmp." + std::to_string(::getppid());
  write_text(live, "busy");
  ASSERT_TRUE(write_file_atomically(target, "whole").ok());
  EXPECT_FALSE(fs::exists(target + ".tmp.2147483646"));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(target));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace samebits
