// bench/cuda/probes/build.sh, the builder of the kernels' timing probes: its --check mode (the
// patches applied to a worktree of their base commit, nothing built) on a small git repository
// made here, its one-line errors, and the shipped probes against this repository's history.
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

namespace fs = std::filesystem;
using testing::Outcome;
using testing::read_text;
using testing::run_command;
using testing::temp_path;
using testing::write_text;

// A repository with one commit holding f.txt ("one\ntwo\nthree\n"); `base` is its commit.
struct Repo {
  std::string dir = temp_path("probe-repo");
  std::string base;
  Repo() {  // (made only where have_git(): each test skips before it otherwise)
    fs::create_directories(dir);
    write_text(dir + "/f.txt", "one\ntwo\nthree\n");
    const Outcome made = run_command("cd " + dir +
                                     " && git init -q . && git add f.txt && git -c user.name=t -c user.email=t@t "
                                     "commit -qm base && git rev-parse HEAD");
    EXPECT_EQ(made.code, 0) << made.err;
    base = made.out.substr(0, made.out.find('\n'));
  }
  ~Repo() { fs::remove_all(dir); }
  // build.sh run from inside the repository (it finds the repository from its working directory).
  Outcome check(const std::string& patches) const {
    return run_command("cd " + dir + " && '" + SAMEBITS_SOURCE_DIR + "/bench/cuda/probes/build.sh' --check " + dir +
                       "/out " + patches);
  }
  std::string patch(const std::string& name, const std::string& header, const std::string& diff) const {
    const std::string path = dir + "/" + name;
    write_text(path, header + diff);
    return path;
  }
};

bool have_git() { return testing::have_program("git"); }

const char kTwoToZwei[] =
    "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+zwei\n three\n";
const char kZweiToDeux[] =
    "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-zwei\n+deux\n three\n";

TEST(ProbeBuild, PatchesApplyInOrderToTheirBaseAndLeaveTheCheckoutAsItWas) {
  if (!have_git()) GTEST_SKIP() << "no git on this machine";
  Repo r;
  const std::string header = "Base: " + r.base + "\n\nA probe.\n\n";
  const std::string a = r.patch("a.patch", header, kTwoToZwei), b = r.patch("b.patch", header, kZweiToDeux);
  const Outcome one = r.check(a);
  EXPECT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("1 patch(es) apply to " + r.base), std::string::npos) << one.out;
  // b applies only on top of a: the order is kept.
  const Outcome both = r.check(a + " " + b);
  EXPECT_EQ(both.code, 0) << both.err;
  EXPECT_NE(both.out.find("2 patch(es) apply"), std::string::npos) << both.out;
  EXPECT_EQ(r.check(b + " " + a).code, 1);
  // The checkout's file is untouched and the temporary worktree is gone.
  EXPECT_EQ(read_text(r.dir + "/f.txt"), "one\ntwo\nthree\n");
  const Outcome trees = run_command("cd " + r.dir + " && git worktree list | wc -l");
  EXPECT_EQ(trees.out, "1\n");
}

TEST(ProbeBuild, BadPatchesAndArgumentsGetOneLineErrors) {
  if (!have_git()) GTEST_SKIP() << "no git on this machine";
  Repo r;
  const std::string header = "Base: " + r.base + "\n\n";
  struct Case {
    std::string patches;
    int code;
    std::string says;
  };
  const Case cases[] = {
      {r.patch("stale.patch", header, kZweiToDeux), 1, "does not apply to " + r.base},
      {r.patch("nobase.patch", "A probe.\n", kTwoToZwei), 2, "line 1 is not 'Base: <commit>'"},
      {r.patch("other.patch", "Base: 0123456789abcdef0123456789abcdef01234567\n", kTwoToZwei), 1,
       "is not a commit of this repository"},
      {r.patch("x.patch", header, kTwoToZwei) + " " +
           r.patch("y.patch", "Base: 0123456789abcdef0123456789abcdef01234567\n", kZweiToDeux),
       2, "differs from the first patch's " + r.base},
      {r.dir + "/missing.patch", 2, "no such patch file"},
      {"", 2, "usage: bench/cuda/probes/build.sh"},
  };
  for (const Case& c : cases) {
    const Outcome o = r.check(c.patches);
    EXPECT_EQ(o.code, c.code) << c.patches << ": " << o.err;
    EXPECT_NE(o.err.find(c.says), std::string::npos) << c.patches << ": " << o.err;
    EXPECT_EQ(o.err.find('\n'), o.err.size() - 1) << "one line: " << o.err;
  }
  EXPECT_EQ(read_text(r.dir + "/f.txt"), "one\ntwo\nthree\n");
}

// The shipped probes still apply to the commits they were written against (skipped in a clone
// without that history).
TEST(ProbeBuild, ShippedProbesApplyToTheirBase) {
  if (!have_git()) GTEST_SKIP() << "no git on this machine";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(SAMEBITS_SOURCE_DIR) / "bench/cuda/probes")) {
    if (entry.path().extension() != ".patch") continue;
    const std::string first = read_text(entry.path().string()).substr(0, 46);
    ASSERT_EQ(first.rfind("Base: ", 0), 0u) << entry.path();
    // (the full 40-digit commit: a short one put the next lines into the command below, which
    // then failed and skipped the test)
    const std::string base = first.substr(6);
    ASSERT_EQ(base.find_first_not_of("0123456789abcdef"), std::string::npos)
        << entry.path() << ": line 1 must name the base's full 40-digit commit";
    const Outcome has = run_command("git cat-file -e " + base + "^{commit}");
    if (has.code != 0) GTEST_SKIP() << "this clone lacks " << base;
    const Outcome o = run_command("bench/cuda/probes/build.sh --check " + temp_path("probe-out") + " " +
                                  entry.path().string());
    EXPECT_EQ(o.code, 0) << entry.path() << ": " << o.err;
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

}  // namespace
}  // namespace samebits
