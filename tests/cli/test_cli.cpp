// The samebits executable: --help everywhere, exit codes (0 pass, 1 golden mismatch or
// divergence, 2 usage or input error), the golden update/check cycle, compare and replay inputs.
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "harness/golden/digest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

using testing::run_samebits;
using testing::temp_path;

// Two samples of the smoke scenario in invariant mode: about a second.
const std::string kQuick = "scenarios/smoke.yaml --samples 2 --mode invariant --threads 1 --no-progress";

TEST(Cli, HelpEverywhere) {
  for (const std::string cmd : {"", "run", "golden", "golden check", "golden update", "compare", "replay", "info"}) {
    SCOPED_TRACE(cmd);
    testing::Outcome o = run_samebits(cmd + " --help");
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_NE(o.out.find("Usage"), std::string::npos) << o.out;
  }
}

// The spin count libgomp reports (OMP_DISPLAY_ENV=verbose) in the last process image of one run of
// `samebits info`: 0 is the passive policy, 300000 libgomp's own default.
std::string openmp_spin_count() {
  const testing::ScopedEnv display("OMP_DISPLAY_ENV", "verbose");
  const testing::Outcome o = run_samebits("info");
  const std::string key = "GOMP_SPINCOUNT = '";
  const size_t at = o.err.rfind(key);
  if (o.code != 0 || at == std::string::npos) return "not reported: " + o.err;
  return o.err.substr(at + key.size(), o.err.find('\'', at + key.size()) - at - key.size());
}

// Worker threads wait passively between parallel regions (no spinning on shared cores) unless the
// user chose a policy, which is kept.
TEST(Cli, OpenMpWorkersWaitPassivelyUnlessTold) {
  const testing::ScopedEnv no_spin_count("GOMP_SPINCOUNT", nullptr);
  {
    const testing::ScopedEnv unset("OMP_WAIT_POLICY", nullptr);
    EXPECT_EQ(openmp_spin_count(), "0");
  }
  {
    const testing::ScopedEnv active("OMP_WAIT_POLICY", "active");
    EXPECT_EQ(openmp_spin_count(), "30000000000");
  }
  {
    const testing::ScopedEnv unset("OMP_WAIT_POLICY", nullptr);
    const testing::ScopedEnv spins("GOMP_SPINCOUNT", "1234");
    EXPECT_EQ(openmp_spin_count(), "1234");
  }
}

TEST(Cli, UsageErrorsExitTwo) {
  const std::string cases[] = {"", "frobnicate", "run", "run scenarios/smoke.yaml --mode fast",
                               "run scenarios/smoke.yaml --samples 0", "run scenarios/smoke.yaml --backend tpu",
                               "compare only_one.json", "golden", "golden check"};
  for (const std::string& args : cases) {
    SCOPED_TRACE(args);
    EXPECT_EQ(run_samebits(args).code, 2);
  }
}

TEST(Cli, InputErrorsExitTwoWithOneLine) {
  struct Case {
    std::string args, expect;
  };
  const Case cases[] = {
      {"run no/such/file.yaml", "no/such/file.yaml: cannot open"},
      {"run " + kQuick + " --model synthetic:no-such-config", "synthetic:no-such-config"},
      {"compare no/a.json no/b.json", "no/a.json: cannot open"},
      {"replay no/trace.json", "no/trace.json: cannot open"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    testing::Outcome o = run_samebits(c.args);
    EXPECT_EQ(o.code, 2);
    EXPECT_NE(o.err.find(c.expect), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
}

TEST(Cli, CudaBackendUnavailableIsAnInputError) {
  testing::Outcome info = run_samebits("info");
  ASSERT_EQ(info.code, 0);
  if (info.out.find("cuda: unavailable") == std::string::npos) GTEST_SKIP() << "a CUDA device is available here";
  testing::Outcome o = run_samebits("run " + kQuick + " --backend cuda");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("backend cuda"), std::string::npos) << o.err;
}

TEST(Cli, InfoListsBackendsAndModel) {
  testing::Outcome o = run_samebits("info");
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("cpu:"), std::string::npos);
  EXPECT_NE(o.out.find("kernel set version"), std::string::npos);
  EXPECT_NE(o.out.find("weights digest"), std::string::npos) << o.out;
}

// Rewrites the invariant golden so that it expects another digest whose step 3 differs.
void corrupt_invariant_golden(const std::string& path) {
  nlohmann::json j;
  std::ifstream(path) >> j;
  nlohmann::json& m = j["modes"]["invariant"];
  const std::string old = m["completion_digest"];
  const std::string fresh = digest_hex(*parse_digest_hex(old) ^ 1);
  m["completion_digest"] = fresh;
  m["expected"] = {{fresh, m["expected"][old]}};
  std::string samples = m["sample_digests"];
  for (size_t i = 0; i < samples.size(); i += 16) samples.replace(i, 16, fresh);
  m["sample_digests"] = samples;
  std::string steps = m["stream_steps"][old];
  steps.replace(3 * 8, 8, "00000000");
  m["stream_steps"] = {{fresh, steps}};
  std::ofstream(path) << j.dump(1);
}

TEST(Cli, GoldenUpdateCheckMismatchNotComparableMalformed) {
  const std::string dir = temp_path("golden");
  const std::string golden = dir + "/smoke/cpu.json";
  testing::Outcome o = run_samebits("golden check " + kQuick + " --golden-dir " + dir);
  EXPECT_EQ(o.code, 2) << "no golden yet: cannot check";
  EXPECT_NE(o.err.find("none"), std::string::npos) << o.err;

  o = run_samebits("golden update " + kQuick + " --golden-dir " + dir);
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_TRUE(std::filesystem::exists(golden));
  o = run_samebits("golden check " + kQuick + " --golden-dir " + dir);
  EXPECT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("golden check passed"), std::string::npos) << o.out;
  o = run_samebits("run " + kQuick + " --golden-dir " + dir);
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find(" pass "), std::string::npos) << o.out;

  // Another sample count is another experiment: not comparable, never a pass or a mismatch.
  o = run_samebits("run scenarios/smoke.yaml --samples 3 --mode invariant --threads 1 --no-progress --golden-dir " + dir);
  EXPECT_EQ(o.code, 0) << o.out;
  EXPECT_NE(o.out.find("not comparable"), std::string::npos) << o.out;
  o = run_samebits("golden check scenarios/smoke.yaml --samples 3 --mode invariant --threads 1 --no-progress --golden-dir " + dir);
  EXPECT_EQ(o.code, 2) << o.out;

  corrupt_invariant_golden(golden);
  o = run_samebits("golden check " + kQuick + " --golden-dir " + dir);
  EXPECT_EQ(o.code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("MISMATCH"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("invariant: sample 0 first differs at step 3"), std::string::npos) << o.out;
  o = run_samebits("run " + kQuick + " --golden-dir " + dir + " --junit " + dir + "/j.xml");
  EXPECT_EQ(o.code, 1);
  std::ifstream junit(dir + "/j.xml");
  std::string xml((std::istreambuf_iterator<char>(junit)), {});
  EXPECT_NE(xml.find("<failure message=\"invariant: sample 0 first differs at step 3"), std::string::npos) << xml;

  std::ofstream(golden) << "{\"samebits_golden\": 1, \"scenario\": \"smoke\"}";
  o = run_samebits("run " + kQuick + " --golden-dir " + dir);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find(golden + ": samebits_golden: 1 is not a known golden schema"), std::string::npos) << o.err;
  std::filesystem::remove_all(dir);
}

TEST(Cli, CompareExitCodes) {
  const std::string a = temp_path("a.json"), b = temp_path("b.json");
  ASSERT_EQ(run_samebits("run " + kQuick + " --json " + a).code, 0);
  ASSERT_EQ(run_samebits("run scenarios/smoke.yaml --samples 3 --mode invariant --threads 1 --no-progress --json " + b).code, 0);
  EXPECT_EQ(run_samebits("compare " + a + " " + a).code, 0);
  testing::Outcome o = run_samebits("compare " + a + " " + b);
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.out.find("sample counts differ"), std::string::npos) << o.out;
  std::ofstream(b) << "{\"samebits_results\": 2}";
  o = run_samebits("compare " + a + " " + b);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find(b + ": identity: missing"), std::string::npos) << o.err;
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

TEST(Cli, MalformedTraceIsAnInputError) {
  const std::string t = temp_path("trace.json");
  std::ofstream(t) << "{\"samebits_trace\": 2, \"runs\": 3}";
  testing::Outcome o = run_samebits("replay " + t);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find(t + ": identity: missing"), std::string::npos) << o.err;
  std::filesystem::remove(t);
}

}  // namespace
}  // namespace samebits
