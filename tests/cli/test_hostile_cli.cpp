// The samebits command under hostile input, each case built from an input that once crashed,
// ran for minutes, or exited 0: mutated traces for replay, device files, a truncated golden under
// `golden update`, outputs to unwritable paths (nothing may be written), and a background request
// the KV cache cannot hold.
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::run_samebits;
using testing::read_text;
using testing::temp_path;

const std::string kQuick = "scenarios/smoke.yaml --samples 2 --mode invariant --threads 1 --no-progress";

void expect_one_line_error(const testing::Outcome& o, const std::string& expect) {
  EXPECT_EQ(o.code, 2) << o.out << o.err;
  EXPECT_NE(o.err.find(expect), std::string::npos) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
}

// One recorded trace shared by the mutation cases.
const json& recorded_trace() {
  static const json trace = [] {
    const std::string path = temp_path("hostile_trace.json");
    testing::Outcome o = run_samebits("run " + kQuick + " --trace " + path);
    EXPECT_EQ(o.code, 0) << o.err;
    return json::parse(read_text(path));
  }();
  return trace;
}

struct TraceCase {
  std::string name;
  std::function<void(json&)> mutate;
  std::string expect;
};

TEST(HostileCli, MutatedTracesAreOneLineErrors) {
  const json& base = recorded_trace();
  ASSERT_FALSE(base["requests"].empty());
  ASSERT_FALSE(base["runs"][0]["records"].empty());
  const std::vector<TraceCase> cases = {
      {"id -1", [](json& t) { t["requests"][0]["id"] = -1; }, "requests[0].id: -1 is negative"},
      {"id 2^64-1", [](json& t) { t["requests"][0]["id"] = UINT64_MAX; }, "is out of range (above 2^63-1)"},
      {"id 2^62 (no allocation by id)", [](json& t) { t["requests"][0]["id"] = int64_t(1) << 62; },
       "which it does not hold"},
      {"id repeated", [](json& t) { t["requests"][1]["id"] = t["requests"][0]["id"]; }, "is used by an earlier request"},
      {"start position 2^40",
       [](json& t) { t["runs"][0]["records"][0]["e"][0][1] = int64_t(1) << 40; }, "records[0]: e: "},
      {"sampling flag 2", [](json& t) { t["runs"][0]["records"][0]["e"][0][3] = 2; }, "samples 0 or 1"},
      {"record index", [](json& t) { t["runs"][0]["records"][0]["i"] = 5; }, "records[0]: i: 5 is not 0"},
      {"negative step", [](json& t) { t["requests"][0]["step"] = -4; }, "requests[0].step: -4 is negative"},
      {"runs empty", [](json& t) { t["runs"] = json::array(); }, "runs: is empty"},
      {"samples -5", [](json& t) { t["identity"]["samples"] = -5; }, "samples: -5 is not in [1, 100000]"},
      {"mode twice", [](json& t) { t["runs"].push_back(t["runs"][0]); }, "runs[1].mode: 'invariant' is recorded twice"},
      {"threads 10^6", [](json& t) { t["identity"]["engine"]["threads"] = 1000000; }, "threads: 1000000 is not in [0, 1024]"},
      {"kv_blocks 2^24", [](json& t) { t["identity"]["engine"]["kv_blocks"] = 1 << 24; }, "over the limit of 16384 MiB"},
      {"number beyond double", [](json& t) { t["samples"] = "@@"; }, "out of range"},
      // Found by fuzz_trace: a top_p beyond a float became infinity and could not be written back.
      {"top_p beyond a float", [](json& t) { t["requests"][0]["sampling"]["top_p"] = 2.2e69; },
       "requests[0].sampling.top_p: 2.2e+69 is not in [1e-06, 1]"},
      {"temperature negative", [](json& t) { t["requests"][0]["sampling"]["temperature"] = -1; },
       "requests[0].sampling.temperature: -1 is not in [0, 100]"},
      {"top_k negative", [](json& t) { t["requests"][0]["sampling"]["top_k"] = -3; },
       "requests[0].sampling.top_k: -3 is not in [0, 1048576]"},
      // Found by fuzz_trace: a negative seed was written back above 2^63-1, unreadable.
      {"seed negative", [](json& t) { t["requests"][0]["sampling"]["seed"] = -99; },
       "requests[0].sampling.seed: -99 is not in [0, 9223372036854775807]"},
  };
  for (const TraceCase& c : cases) {
    SCOPED_TRACE(c.name);
    json t = base;
    c.mutate(t);
    std::string text = t.dump();
    if (c.name == "number beyond double") text.replace(text.find("\"@@\""), 4, "1e309");
    const std::string path = temp_path("mutated_trace.json");
    std::ofstream(path, std::ios::binary) << text;
    expect_one_line_error(run_samebits("replay " + path), c.expect);
  }
}

TEST(HostileCli, DeviceFilesAreRefusedWithoutReading) {
  expect_one_line_error(run_samebits("compare /dev/zero /dev/zero"), "/dev/zero: is not a regular file");
  expect_one_line_error(run_samebits("run /dev/urandom"), "/dev/urandom: is not a regular file");
  expect_one_line_error(run_samebits("replay /dev/zero"), "/dev/zero: is not a regular file");
}

TEST(HostileCli, GoldenUpdateOverATruncatedGoldenChangesNothing) {
  const std::string dir = temp_path("golden_truncated");
  testing::Outcome o = run_samebits("golden update " + kQuick + " --golden-dir " + dir);
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string golden = dir + "/smoke/cpu.json";
  const std::string whole = read_text(golden);
  std::ofstream(golden, std::ios::binary) << whole.substr(0, whole.size() / 2);
  o = run_samebits("golden update scenarios/smoke.yaml --samples 2 --mode default --threads 1 --no-progress --golden-dir " + dir);
  expect_one_line_error(o, "golden not updated; delete the file to write a new one");
  EXPECT_EQ(read_text(golden), whole.substr(0, whole.size() / 2));
}

TEST(HostileCli, NothingIsWrittenWhenAnOutputCannotBe) {
  const std::string dir = temp_path("outputs");
  fs::create_directories(dir);
  std::ofstream(dir + "/plain") << "a file, not a folder";
  const std::string bad = dir + "/plain/out.md";
  testing::Outcome o = run_samebits("run " + kQuick + " --json " + dir + "/ok.json --markdown " + bad);
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_FALSE(fs::exists(dir + "/ok.json"));
  o = run_samebits("golden update " + kQuick + " --golden-dir " + dir + "/g --json " + bad);
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_FALSE(fs::exists(dir + "/g/smoke/cpu.json")) << "the golden was written although the command failed";
  for (const auto& e : fs::recursive_directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(HostileCli, BackgroundRequestTooLongForTheKvCacheIsReported) {
  const std::string path = temp_path("kv_small.yaml");
  std::ofstream(path) << "name: kv_small\nprompt: \"hi\"\nsamples: 2\nmax_new_tokens: 4\n"
                         "engine: {block_size: 8, kv_blocks: 4, max_tokens_per_step: 64, max_seqs: 4}\n"
                         "mix: {background: 4, prompt_len: {dist: fixed, value: 40}, output_len: {dist: fixed, value: 8}}\n";
  expect_one_line_error(run_samebits("run " + path + " --threads 1 --no-progress"),
                        "engine.kv_blocks: 4 cannot hold a background request of 48 tokens");
}

}  // namespace
}  // namespace samebits
