// ci/gpu_one_call.sh (issue 9's evidence from one device call) on a machine without a GPU: stand-in
// binaries, nvidia-smi and compute-sanitizer (shell scripts written here) and the stand-in torch of
// tests/cli/fake_torch play a call. The steps run in their order and the tables sum them up; a
// failing gpu test fails the call (its inverse of exit 0); a card other than REQUIRE_CARD's runs
// nothing; a budget spent leaves the later steps NOT RUN and keeps the tables of what ran. Then
// ci/pack_gpu_call.sh, which packs a build's binaries and libraries for the device, and
// ci/gpu_one_call_packed.sh, which runs the call there from that archive.
#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

namespace fs = std::filesystem;
using testing::have_program;
using testing::Outcome;
using testing::read_text;
using testing::run_command;
using testing::squeeze;
using testing::temp_path;
using testing::write_script;
using testing::write_stand_in_compute_sanitizer;
using testing::write_text;

// dir/tools: nvidia-smi (the card in dir/card), compute-sanitizer; dir/bin: the four binaries, each
// appending "NAME ARGS" to dir/runs. gpu_tests lists GpuRmsNorm.A and GpuAttentionPrefill.B, and
// fails B where dir/fail exists; bench_cuda_attention sleeps dir/sleep seconds where it exists.
struct Call {
  fs::path dir = temp_path("one-call");
  fs::path bin = dir / "bin", out = dir / "out";
  Call() {
    fs::create_directories(dir / "tools");
    fs::create_directories(bin);
    const std::string d = dir.string();
    write_text(dir / "card", "NVIDIA H200, 143771 MiB, 580.159.04, 700.00 W, 1980 MHz\n");
    write_script(dir / "tools" / "nvidia-smi", "#!/bin/bash\ncat " + d + "/card\n");
    write_stand_in_compute_sanitizer(dir / "tools" / "compute-sanitizer");
    const std::string log = "echo \"$(basename \"$0\") $*\" >> " + d + "/runs\n";
    write_script(bin / "bench_cuda_attention",
                 "#!/bin/bash\n" + log + "[[ -f " + d + "/sleep ]] && sleep $(cat " + d + "/sleep)\n" +
                     "echo 'attention us GB/s|TF frac frac_bw frac_tc'\n"
                     "echo 'prefill/invariant/chunk=1024 20.0 1 0.250'\necho 'prefill/default/chunk=1024 19.0 1 0.263'\n"
                     "echo 'decode-graph/invariant/batch=16/context=2048 40.0 1 0.800'\n"
                     "echo 'device copy bandwidth: 4.27 TB/s'\n");
    write_script(bin / "bench_cuda_matmul",
                 "#!/bin/bash\n" + log +
                     "echo 'geometric-mean throughput ratio invariant/cuBLAS over 60 shapes: 0.955; worst 0.815'\n");
    write_script(bin / "gpu_tests", "#!/bin/bash\n" + log + R"sh(for a in "$@"; do [[ $a == --gtest_list_tests ]] && { printf 'GpuRmsNorm.\n  A\nGpuAttentionPrefill.\n  B\n'; exit 0; }; done
echo "[ RUN      ] GpuRmsNorm.A"; echo "[       OK ] GpuRmsNorm.A (1 ms)"
echo "[ RUN      ] GpuAttentionPrefill.B"
if [[ -f )sh" + d + R"sh(/fail ]]; then echo "[  FAILED  ] GpuAttentionPrefill.B (2 ms)"; echo "[  PASSED  ] 1 test."; exit 1; fi
echo "[       OK ] GpuAttentionPrefill.B (2 ms)"; echo "[  PASSED  ] 2 tests."
)sh");
    write_script(bin / "samebits", "#!/bin/bash\n" + log + "echo \"golden check $3: pass\"\n");
  }
  ~Call() { fs::remove_all(dir); }
  // `command` with the stand-in tools first on PATH and the stand-in torch importable.
  Outcome run_with_stand_ins(const std::string& command) const {
    return run_command("PATH=" + (dir / "tools").string() +
                       ":$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=tests/cli/fake_torch " + command);
  }
  Outcome run(const std::string& env, const std::string& args = "") const {
    return run_with_stand_ins(env + " ci/gpu_one_call.sh " + bin.string() + " " + out.string() + " " + args);
  }
  std::string runs() const { return read_text(dir / "runs"); }
};

TEST(GpuOneCallScript, RunsEveryStepInOrderAndSumsThemUpBelowTheTables) {
  if (!have_program("python3") || !have_program("tar")) GTEST_SKIP() << "no python3 or tar here";
  Call c;
  const Outcome r = c.run("REQUIRE_CARD=H200");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  // The benches first, then the short goldens, the tests, the full golden, the sanitizers (last:
  // they take what is left, up to 200 s); their four shards (each case under each tool) run side
  // by side, in any order.
  std::string in_turn, shards;
  const std::string runs = c.runs();
  for (size_t at = 0, end; at < runs.size(); at = end + 1) {
    end = runs.find('\n', at);
    const std::string line = runs.substr(at, end - at + 1);
    (line.find("--gtest_brief=1") == std::string::npos ? in_turn : shards) += line;
  }
  EXPECT_EQ(in_turn,
            "bench_cuda_attention \nbench_cuda_attention \nbench_cuda_matmul \n"
            "samebits golden check scenarios/feynman_ci.yaml --backend cuda --no-progress\n"
            "samebits golden check scenarios/mutation.yaml --backend cuda --no-progress\n"
            "gpu_tests --gtest_filter=-GpuFixedExpf.*\n"
            "samebits golden check scenarios/feynman.yaml --backend cuda --no-progress\n"
            "gpu_tests --gtest_list_tests --gtest_filter=GpuRmsNorm.*:GpuAttentionPrefill.*:GpuAttentionOutput.*:"
            "GpuAttention.MixedBatchMatchesCpuBackend:-GpuMutationSuite.*\n");
  EXPECT_EQ(std::count(shards.begin(), shards.end(), '\n'), 4) << shards;
  const std::string steps = squeeze(read_text(c.out / "steps.txt"));
  for (const char* name : {"attention1", "attention2", "matmul", "sdpa", "golden_feynman_ci", "golden_mutation",
                           "gpu_tests", "sanitizers", "golden_feynman"}) {
    EXPECT_NE(steps.find(std::string(name) + " rc 0 "), std::string::npos) << name << "\n" << steps;
  }
  // (the sanitizers last, with their full 200 s where the budget leaves them: the default 570 here)
  const size_t sanitizers = steps.find("sanitizers rc 0 ");
  ASSERT_NE(sanitizers, std::string::npos) << steps;
  EXPECT_NE(steps.find("(limit 200 s)", sanitizers), std::string::npos) << steps;
  EXPECT_EQ(steps.find("golden_feynman ", sanitizers), std::string::npos) << steps;
  const std::string tables = squeeze(read_text(c.out / "tables.md"));
  EXPECT_NE(tables.find("Device: NVIDIA H200\n"), std::string::npos) << tables;
  // (the library's columns from the stand-in torch: 50 us a call, 0.174 of the rate at chunk 1024)
  EXPECT_NE(tables.find("| chunk 1024 | 0.250 | 0.263 | 1.05 | 0.174 | 0.174 |"), std::string::npos) << tables;
  EXPECT_NE(tables.find("none below 0.75 | 0.955, worst 0.815 | yes |"), std::string::npos) << tables;
  EXPECT_NE(tables.find("Checks in the same call:\n- gpu tests: 2 passed, none failed\n"
                        "- memcheck: 2 of 2 test cases clean\n- racecheck: 2 of 2 test cases clean"),
            std::string::npos)
      << tables;
  EXPECT_NE(read_text(c.out / "tables.json").find("\"gpu tests\": \"2 passed, none failed\""), std::string::npos);
  EXPECT_NE(r.out.find("=== tables (OUT/tables.md)\n| target | values | met |"), std::string::npos) << r.out;
  // Everything in one archive too, for a device that brings back only a few files.
  const Outcome listed = run_command("tar -tzf " + (c.out / "one_call.tgz").string() + " | sort");
  for (const char* file : {"./tables.md", "./steps.txt", "./gpu_tests.log", "./san/sanitizers.md", "./sdpa.json"}) {
    EXPECT_NE(listed.out.find(std::string(file) + "\n"), std::string::npos) << file << "\n" << listed.out;
  }
  EXPECT_EQ(listed.out.find("one_call.tgz"), std::string::npos) << listed.out;

  // The inverse: a gpu test that fails fails the call, and the tables name it.
  write_text(c.dir / "fail", "");
  fs::remove_all(c.out);
  const Outcome failing = c.run("");
  EXPECT_EQ(failing.code, 1) << failing.out << failing.err;
  EXPECT_NE(squeeze(read_text(c.out / "steps.txt")).find("gpu_tests rc 1 "), std::string::npos);
  EXPECT_NE(read_text(c.out / "tables.md").find("- gpu tests: 1 passed, 1 failed (GpuAttentionPrefill.B)"),
            std::string::npos)
      << read_text(c.out / "tables.md");
}

TEST(GpuOneCallScript, AnotherCardThanTheOneRequiredRunsNothing) {
  Call c;
  write_text(c.dir / "card", "NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04, 700.00 W, 1980 MHz\n");
  const Outcome r = c.run("REQUIRE_CARD=H200");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_EQ(r.err, "gpu_one_call: the card is not an H200 (REQUIRE_CARD): nothing run\n");
  EXPECT_EQ(read_text(c.out / "gpu.txt"), read_text(c.dir / "card"));  // (which card it was, kept)
  EXPECT_FALSE(fs::exists(c.dir / "runs"));
}

// A budget spent: the steps after it are NOT RUN and fail the call, the tables keep what ran.
TEST(GpuOneCallScript, ASpentBudgetLeavesTheLaterStepsNotRunAndKeepsTheTables) {
  if (!have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
  Call c;
  write_text(c.dir / "sleep", "3");
  const Outcome r = c.run("", "8");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const std::string steps = squeeze(read_text(c.out / "steps.txt"));
  EXPECT_NE(steps.find("attention1 rc 0 "), std::string::npos) << steps;
  for (const char* name : {"matmul", "sdpa", "golden_feynman_ci", "gpu_tests", "sanitizers", "golden_feynman"}) {
    EXPECT_NE(steps.find(std::string(name) + " NOT RUN (the call's 8 s were spent)"), std::string::npos)
        << name << "\n" << steps;
  }
  EXPECT_EQ(read_text(c.dir / "runs").find("bench_cuda_matmul"), std::string::npos);
  EXPECT_NE(read_text(c.out / "tables.md").find("| chunk 1024 | 0.250 | 0.263 | 1.05 | - | - |"), std::string::npos)
      << read_text(c.out / "tables.md");
  // A budget too small for any step: no tables, and the call says so in place of the verdicts.
  fs::remove_all(c.out);
  const Outcome none = c.run("", "4");
  EXPECT_EQ(none.code, 1) << none.out << none.err;
  EXPECT_NE(squeeze(read_text(c.out / "steps.txt")).find("attention1 NOT RUN (the call's 4 s were spent)"),
            std::string::npos);
  EXPECT_NE(none.out.find("=== tables (OUT/tables.md)\nno bench_cuda_attention log with its table: no tables\n"),
            std::string::npos)
      << none.out;
}

// ci/tables_inputs.sh, which both device scripts source: a log that lacks what the tables read
// from it (a step cut short) is left out; one that has it is passed under its flag; the tables
// written, the inputs are forgotten; an unknown input is refused by name.
TEST(GpuOneCallScript, TheTablesTakeOnlyLogsThatHoldWhatTheyRead) {
  const fs::path dir = temp_path("tables-inputs");
  fs::create_directories(dir);
  const std::string d = dir.string();
  write_text(dir / "matmul_cut.log", "N  K  M  invariant_us\n4096 4096 1 13.0\n");
  write_text(dir / "matmul.log", "geometric-mean throughput ratio invariant/cuBLAS over 60 shapes: 0.955\n");
  write_text(dir / "tests.log", "[ RUN      ] GpuRmsNorm.A\n");  // (killed before any result)
  write_text(dir / "attention.log", "device copy bandwidth: 4.27 TB/s\n");
  write_text(dir / "empty.json", "");
  write_script(dir / "probe.sh", "#!/bin/bash\nsource ci/tables_inputs.sh\nd=" + d + R"sh(
table_input --matmul $d/matmul_cut.log && table_input --matmul $d/matmul.log
table_input --gpu-tests $d/tests.log && table_input --sdpa $d/empty.json
table_input attention $d/attention.log && table_input attention $d/none.log
echo "${tables_args[*]} | ${tables_logs[*]}"
write_tables $d/tables.md $d/tables.json; echo "${#tables_args[@]} ${#tables_logs[@]}"
table_input --bogus $d/matmul.log; echo $?
)sh");
  const Outcome r = run_command((dir / "probe.sh").string());
  // (after write_tables the inputs are forgotten: the one-call script's second pass adds them anew)
  EXPECT_EQ(r.out, "--matmul " + d + "/matmul.log | " + d + "/attention.log\n0 0\n2\n") << r.err;
  EXPECT_EQ(r.err, "table_input: --bogus is not an input of the tables\n");
  fs::remove_all(dir);
}

TEST(GpuOneCallScript, BadArgumentsAreOneLineErrorsAndRunNothing) {
  Call c;
  fs::remove(c.bin / "samebits");
  const struct {
    std::string args, says;
  } cases[] = {
      {c.bin.string(), "usage: ci/gpu_one_call.sh BIN_DIR OUT [SECONDS]"},
      {(c.dir / "none").string() + " " + c.out.string(), "BIN_DIR " + (c.dir / "none").string() + " is not a folder"},
      {c.bin.string() + " " + c.out.string() + " 0", "SECONDS 0: a whole number above 0"},
      {c.bin.string() + " " + c.out.string() + " 9x", "SECONDS 9x: a whole number above 0"},
      {c.bin.string() + " " + c.out.string(), c.bin.string() + "/samebits: no such executable"},
  };
  for (const auto& k : cases) {
    const Outcome r = run_command("ci/gpu_one_call.sh " + k.args);
    EXPECT_EQ(r.code, 2) << k.args;
    EXPECT_EQ(r.err, "gpu_one_call: " + k.says + "\n") << k.args;
    EXPECT_FALSE(fs::exists(c.out)) << k.args;
  }
  EXPECT_FALSE(fs::exists(c.dir / "runs"));
  // An OUT that holds an earlier call's files: refused, the files as they were.
  write_script(c.bin / "samebits", "#!/bin/bash\n");
  fs::create_directories(c.out);
  write_text(c.out / "sdpa.json", "earlier");
  const Outcome used = run_command("ci/gpu_one_call.sh " + c.bin.string() + " " + c.out.string());
  EXPECT_EQ(used.code, 2);
  EXPECT_EQ(used.err, "gpu_one_call: OUT " + c.out.string() + " is not a new or empty folder\n");
  EXPECT_EQ(read_text(c.out / "sdpa.json"), "earlier");
  EXPECT_FALSE(fs::exists(c.dir / "runs"));
}

// ci/pack_gpu_call.sh and ci/gpu_one_call_packed.sh: the call's binaries carried to the device as
// one archive. lay_out_build_tree puts the call's stand-in binaries where a cuda preset's tree has
// them, samebits taken from `samebits` (the stand-in's path, or the real executable's).
void lay_out_build_tree(const Call& c, const fs::path& tree, const fs::path& samebits) {
  const std::pair<fs::path, const char*> places[] = {{c.bin / "bench_cuda_attention", "bench/cuda/bench_cuda_attention"},
                                                     {c.bin / "bench_cuda_matmul", "bench/cuda/bench_cuda_matmul"},
                                                     {c.bin / "gpu_tests", "tests/gpu/gpu_tests"},
                                                     {samebits, "harness/samebits"}};
  for (const auto& [from, to] : places) {
    fs::create_directories((tree / to).parent_path());
    fs::copy_file(from, tree / to, fs::copy_options::overwrite_existing);
  }
}
Outcome pack(const fs::path& tree, const fs::path& archive, const std::string& env = "PACK_XZ_LEVEL=0") {
  return run_command(env + " ci/pack_gpu_call.sh " + tree.string() + " " + archive.string());
}

// The real samebits (an ELF with symbols, loading yaml-cpp from this machine's packages) beside
// stand-in scripts: the ELF packed stripped with its package libraries and without the C/C++
// runtime's, the scripts as they are.
TEST(PackGpuCall, PacksTheExecutablesStrippedWithThePackagesLibraries) {
  if (!have_program("xz") || !have_program("readelf") || !have_program("ldd")) GTEST_SKIP() << "no xz, readelf or ldd";
  Call c;
  const fs::path tree = c.dir / "build", archive = c.dir / "call.tar.xz", unpacked = c.dir / "unpacked";
  lay_out_build_tree(c, tree, SAMEBITS_EXE);
  const Outcome r = pack(tree, archive);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("bench_cuda_attention bench_cuda_matmul gpu_tests samebits"), std::string::npos) << r.out;
  fs::create_directories(unpacked);
  ASSERT_EQ(run_command("tar -xJf " + archive.string() + " -C " + unpacked.string()).code, 0);
  const fs::path bm = unpacked / "bm";
  EXPECT_EQ(read_text(bm / "gpu_tests"), read_text(c.bin / "gpu_tests"));
  EXPECT_TRUE((fs::status(bm / "bench_cuda_matmul").permissions() & fs::perms::owner_exec) != fs::perms::none);
  // (the symbol table is there before, gone after: the check can fail)
  const auto has_symtab = [](const fs::path& f) {
    return run_command("readelf -S " + f.string()).out.find(".symtab") != std::string::npos;
  };
  EXPECT_TRUE(has_symtab(SAMEBITS_EXE));
  EXPECT_FALSE(has_symtab(bm / "samebits"));
  EXPECT_LT(fs::file_size(bm / "samebits"), fs::file_size(SAMEBITS_EXE));
  const std::string libs = run_command("ls " + (bm / "lib").string()).out;
  EXPECT_NE(libs.find("libyaml-cpp"), std::string::npos) << libs;
  for (const char* runtime : {"libc.so", "libstdc++", "libgcc_s", "libcudart"}) {
    EXPECT_EQ(libs.find(runtime), std::string::npos) << runtime << "\n" << libs;
  }
}

// From the archive to the call: on an H200 (REQUIRE_CARD's default) every step runs and OUT keeps
// only the call's own archive; on another card nothing runs and OUT keeps what says which card, or
// ON_OTHER_CARD runs instead.
TEST(PackGpuCall, TheCallRunsFromTheArchiveAndLeavesOnlyItsPack) {
  if (!have_program("python3") || !have_program("xz")) GTEST_SKIP() << "no python3 or xz here";
  Call c;
  const fs::path tree = c.dir / "build", archive = c.dir / "call.tar.xz";
  lay_out_build_tree(c, tree, c.bin / "samebits");
  ASSERT_EQ(pack(tree, archive).code, 0);
  const std::string call = "ci/gpu_one_call_packed.sh " + archive.string() + " " + c.out.string();
  const Outcome r = c.run_with_stand_ins(call);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(c.out)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"one_call.tgz"});
  const std::string packed = run_command("tar -tzf " + (c.out / "one_call.tgz").string()).out;
  EXPECT_NE(packed.find("./tables.md"), std::string::npos) << packed;
  for (const char* b : {"bench_cuda_attention", "bench_cuda_matmul", "gpu_tests", "samebits"}) {
    EXPECT_NE(c.runs().find(b), std::string::npos) << b;
  }
  fs::remove_all(c.out);
  fs::remove(c.dir / "runs");
  write_text(c.dir / "card", "NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04, 700.00 W, 1980 MHz\n");
  const Outcome other = c.run_with_stand_ins(call);
  EXPECT_EQ(other.code, 3) << other.out << other.err;
  EXPECT_EQ(read_text(c.out / "gpu.txt"), read_text(c.dir / "card"));
  EXPECT_FALSE(fs::exists(c.dir / "runs"));
  // ON_OTHER_CARD runs there instead, from the repository root, on the unpacked binaries (BIN_DIR,
  // their lib/ first on LD_LIBRARY_PATH), writing into OUT; its status is the script's.
  fs::remove_all(c.out);
  const Outcome instead = c.run_with_stand_ins(
      "ON_OTHER_CARD='test -f ci/gpu_sanitizers.sh && \"$BIN_DIR/gpu_tests\" --gtest_list_tests > \"$OUT/list\" && "
      "echo \"${LD_LIBRARY_PATH%%:*}\" > \"$OUT/lib\" && exit 5' " + call);
  EXPECT_EQ(instead.code, 5) << instead.out << instead.err;
  EXPECT_NE(instead.err.find("running ON_OTHER_CARD on this card instead"), std::string::npos) << instead.err;
  EXPECT_EQ(read_text(c.out / "gpu.txt"), read_text(c.dir / "card"));
  EXPECT_EQ(read_text(c.out / "list"), "GpuRmsNorm.\n  A\nGpuAttentionPrefill.\n  B\n");
  EXPECT_EQ(fs::path(read_text(c.out / "lib")).filename(), "lib\n");
  EXPECT_EQ(c.runs().find("bench_cuda"), std::string::npos) << c.runs();  // nothing of the call ran
  // More than the device machine returns (8 files; here 2 + 7 in a folder): packed into out.tgz,
  // nothing else left; 8 or fewer stay as they are (above).
  fs::remove_all(c.out);
  const Outcome many = c.run_with_stand_ins(
      "ON_OTHER_CARD='mkdir \"$OUT/h100\" && for i in 1 2 3 4 5 6 7; do echo $i > \"$OUT/h100/log$i\"; done && "
      "echo x > \"$OUT/list\"' " + call);
  EXPECT_EQ(many.code, 0) << many.out << many.err;
  std::vector<std::string> kept;
  for (const auto& e : fs::directory_iterator(c.out)) kept.push_back(e.path().filename().string());
  EXPECT_EQ(kept, std::vector<std::string>{"out.tgz"});
  const std::string inside = run_command("tar -xzOf " + (c.out / "out.tgz").string() + " ./h100/log7 ./gpu.txt").out;
  EXPECT_EQ(inside, "7\n" + read_text(c.dir / "card")) << inside;
}

TEST(PackGpuCall, BadInputIsAOneLineErrorAndWritesNothing) {
  if (!have_program("xz")) GTEST_SKIP() << "no xz here";
  Call c;
  const fs::path tree = c.dir / "build", archive = c.dir / "call.tar.xz";
  lay_out_build_tree(c, tree, c.bin / "samebits");
  const std::string t = tree.string();
  const struct {
    std::string env, args, says;
    int code;
  } cases[] = {
      {"", t, "usage: ci/pack_gpu_call.sh BUILD_DIR ARCHIVE.tar.xz", 2},
      {"", t + " " + (c.dir / "call.tgz").string(), "ARCHIVE " + (c.dir / "call.tgz").string() + ": the name must end in .tar.xz", 2},
      {"", t + " " + (c.dir / "none" / "a.tar.xz").string(), "ARCHIVE " + (c.dir / "none" / "a.tar.xz").string() + ": no folder " + (c.dir / "none").string(), 2},
      {"PACK_XZ_LEVEL=x", t + " " + archive.string(), "PACK_XZ_LEVEL x: a digit, 0 to 9", 2},
      {"PACK_MAX_MIB=0", t + " " + archive.string(),
       archive.string() + " would be 0 MiB, over PACK_MAX_MIB=0 (the device's carry limit): nothing written", 1},
  };
  for (const auto& k : cases) {
    const Outcome r = run_command(k.env + " ci/pack_gpu_call.sh " + k.args);
    EXPECT_EQ(r.code, k.code) << k.args;
    EXPECT_EQ(r.err, "pack_gpu_call: " + k.says + "\n") << k.args;
  }
  fs::remove(tree / "harness" / "samebits");
  const Outcome missing = pack(tree, archive);
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "pack_gpu_call: " + t + "/harness/samebits: no such executable (cmake --build " + t +
                             " --target bench_cuda_attention bench_cuda_matmul gpu_tests samebits)\n");
  std::vector<std::string> left;  // (neither the archive nor a partial one)
  for (const auto& e : fs::directory_iterator(c.dir)) left.push_back(e.path().filename().string());
  EXPECT_EQ(std::count_if(left.begin(), left.end(), [](const std::string& n) { return n.find("call.") == 0; }), 0);
  // The device side: an archive that is not there, or not one.
  write_text(c.dir / "junk.tar.xz", "junk");
  const Outcome none = run_command("ci/gpu_one_call_packed.sh " + archive.string() + " " + c.out.string());
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(none.err, "gpu_one_call_packed: ARCHIVE " + archive.string() + ": no such file\n");
  const Outcome junk = run_command("ci/gpu_one_call_packed.sh " + (c.dir / "junk.tar.xz").string() + " " + c.out.string());
  EXPECT_EQ(junk.code, 2);
  EXPECT_EQ(junk.err.find("gpu_one_call_packed: ARCHIVE " + (c.dir / "junk.tar.xz").string() + ": does not unpack to bm/ ("), 0u)
      << junk.err;
  EXPECT_FALSE(fs::exists(c.out));
  EXPECT_FALSE(fs::exists(c.dir / "runs"));
}

}  // namespace
}  // namespace samebits
