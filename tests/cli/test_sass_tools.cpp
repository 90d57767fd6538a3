// bench/cuda/register_liveness.py, the register-liveness reader of a kernel's SASS, and
// bench/cuda/sass_mix.py, its instruction mix by source line (the same reading of the cubin and the
// listing), on a cubin and a disassembly written here: a small ELF file whose .text sections hold the kernels' bytes
// (only branch offsets and one instruction the listing leaves out are read from them), and a
// stand-in nvdisasm that prints the listing. The live sets below are worked out by hand from the
// listings; each case names the part of the analysis it would catch going wrong.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cli/subprocess.h"

namespace samebits {
namespace {

namespace fs = std::filesystem;
using testing::Outcome;
using testing::read_text;
using testing::run_command;
using testing::temp_path;
using testing::write_script;

// k_loop: R2 is read by an instruction the listing leaves out (0x40, decoded from its bytes) at the
// head of a loop closed by the branch at 0x70, so it stays live through the whole loop body.
// k_split: warpgroups split at 0x30; the producer (setmaxnreg DEALLOC) holds three registers, the
// consumer (TRY_ALLOC) two, one of them R1, written before the split and read by the consumer only.
// k_forms: an ldmatrix of four registers, a guarded write, a wgmma that accumulates into R16-R23
// with its A fragment from R8-R11, 128-bit stores.
// k_cold: a loop 0x20-0x70 whose address range holds an exit path (0x40-0x50) that leaves it for
// good: 4 instructions on the loop's paths, 6 in its range.
const char kListing[] = R"sass(	.headerflags	@"EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
	.section	.text.k_loop,"ax",@progbits
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   MOV R2, 0x1 ;
        /*0020*/                   MOV R3, 0x2 ;
	//## File "kernels/demo.cu", line 12 inlined at "kernels/demo.cu", line 40
	//## File "kernels/demo.cu", line 40
        /*0030*/                   IMAD.WIDE R6, R0, 0x4, R8 ;
        /*0050*/                   IADD3 R3, R5, R0, RZ ;
        /*0060*/                   ISETP.NE.AND P0, PT, R3, 0x10, PT ;
        /*0070*/               @P0 BRA 0x40 ;
	//## File "kernels/demo.cu", line 44
        /*0080*/                   STG.E [R6.64], R5 ;
        /*0090*/                   EXIT ;
        /*00a0*/                   BRA 0xa0;
	.section	.text.k_split,"ax",@progbits
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   S2R R1, SR_CTAID.X ;
        /*0020*/                   ISETP.GE.AND P0, PT, R0, 0x80, PT ;
        /*0030*/               @P0 BRA 0x90 ;
        /*0040*/                   USETMAXREG.DEALLOC.CTAPOOL 0x38 ;
        /*0050*/                   MOV R20, 0x1 ;
        /*0060*/                   MOV R21, 0x2 ;
        /*0070*/                   STS.64 [R0], R20 ;
        /*0080*/                   EXIT ;
        /*0090*/                   USETMAXREG.TRY_ALLOC.CTAPOOL 0xe8 ;
        /*00a0*/                   IADD3 R4, R1, 0x1, RZ ;
        /*00b0*/                   STS [R0], R4 ;
        /*00c0*/                   EXIT ;
	.section	.text.k_forms,"ax",@progbits
        /*0000*/                   LDSM.16.M88.4 R8, [R2] ;
        /*0010*/               @P1 MOV R12, 0x0 ;
        /*0020*/                   HGMMA.64x16x16.F32.BF16 R16, R8, gdesc[UR4], R16 ;
        /*0030*/                   STS.128 [R12], R16 ;
        /*0040*/                   STS.128 [R12+0x10], R20 ;
        /*0050*/                   EXIT ;
	.section	.text.k_cold,"ax",@progbits
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   MOV R1, 0x0 ;
        /*0020*/                   ISETP.GE.AND P0, PT, R1, R0, PT ;
        /*0030*/              @!P0 BRA 0x60 ;
        /*0040*/                   STG.E [R2.64], R1 ;
        /*0050*/                   EXIT ;
        /*0060*/                   IADD3 R1, R1, 0x1, RZ ;
        /*0070*/                   BRA 0x20 ;
        /*0080*/                   EXIT ;
)sass";

// The low 64 bits of a BRA from `at` to `target`: the offset from the next instruction, its low
// byte in 4-byte units at bits 16-23 or all of it at bits 24-63 (two's complement over 40 bits).
uint64_t branch_bits(int64_t at, int64_t target, bool low_byte) {
  const int64_t offset = target - (at + 16);
  if (low_byte) return uint64_t(offset / 4) << 16;
  return (uint64_t(offset) & ((uint64_t(1) << 40) - 1)) << 24;
}

// v's bytes, little-endian, at s[at].
template <typename T>
void put(std::string& s, size_t at, T v) {
  for (size_t b = 0; b < sizeof(T); ++b) s[at + b] = char((uint64_t(v) >> (8 * b)) & 0xff);
}

// A .text of `instructions` zero instructions but for the given low 64 bits at given addresses.
std::string text_bytes(int instructions, const std::vector<std::pair<int, uint64_t>>& words) {
  std::string text(size_t(instructions) * 16, '\0');
  for (const auto& [at, lo] : words) put<uint64_t>(text, size_t(at), lo);
  return text;
}

// An ELF64 file of a null section, .shstrtab and the given .text.NAME sections; byte 8 of the
// header (the ABI version) set to `abi_version`.
std::string elf(const std::vector<std::pair<std::string, std::string>>& texts, uint8_t abi_version) {
  std::string names(1, '\0');
  std::vector<uint32_t> name_at;
  name_at.push_back(uint32_t(names.size()));
  names += std::string(".shstrtab") + '\0';
  for (const auto& t : texts) {
    name_at.push_back(uint32_t(names.size()));
    names += ".text." + t.first + '\0';
  }
  std::string file(64, '\0');
  file.replace(0, 4, "\x7f" "ELF");
  file[4] = 2;  // 64-bit
  file[5] = 1;  // little-endian
  file[8] = char(abi_version);
  std::vector<std::pair<size_t, size_t>> placed;  // (offset, size) of .shstrtab, then the texts
  placed.emplace_back(file.size(), names.size());
  file += names;
  for (const auto& t : texts) {
    file.resize((file.size() + 15) / 16 * 16, '\0');
    placed.emplace_back(file.size(), t.second.size());
    file += t.second;
  }
  file.resize((file.size() + 7) / 8 * 8, '\0');
  const size_t shoff = file.size(), count = placed.size() + 1;
  put<uint64_t>(file, 0x28, shoff);
  put<uint16_t>(file, 0x3a, 64);
  put<uint16_t>(file, 0x3c, uint16_t(count));
  put<uint16_t>(file, 0x3e, 1);  // .shstrtab
  file.append(64 * count, '\0');
  for (size_t i = 0; i < placed.size(); ++i) {
    const size_t h = shoff + 64 * (i + 1);
    put<uint32_t>(file, h, name_at[i]);
    put<uint32_t>(file, h + 4, i == 0 ? 3 : 1);  // SHT_STRTAB, SHT_PROGBITS
    put<uint64_t>(file, h + 24, placed[i].first);
    put<uint64_t>(file, h + 32, placed[i].second);
  }
  return file;
}

class SassTools : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::have_program("python3")) GTEST_SKIP() << "no python3 on this machine";
    // k_loop's 0x40, left out of the listing: opcode 0x010, register form (bits 9-11 = 1), no
    // guard (bits 12-15 = 7), R5 <- R2, R3 (bits 16-23, 24-31, 32-39).
    const uint64_t undecoded = 0x010 | (1u << 9) | (7u << 12) | (uint64_t(5) << 16) | (uint64_t(2) << 24) |
                               (uint64_t(3) << 32);
    const std::string loop = text_bytes(11, {{0x40, undecoded},
                                             {0x70, branch_bits(0x70, 0x40, false)},
                                             {0xa0, branch_bits(0xa0, 0xa0, false)}});
    const std::string split = text_bytes(13, {{0x30, branch_bits(0x30, 0x90, true)}});
    cubin_ = temp_path("demo.cubin");
    std::ofstream(cubin_, std::ios::binary)
        << elf({{"k_loop", loop},
                {"k_split", split},
                {"k_forms", text_bytes(6, {})},
                {"k_cold", text_bytes(9, {{0x30, branch_bits(0x30, 0x60, true)}, {0x70, branch_bits(0x70, 0x20, false)}})}},
               8);
    listing_ = temp_path("demo.sass");
    std::ofstream(listing_) << kListing;
    seen_ = temp_path("nvdisasm_input");
    // Records the path it was given; refuses a header whose ABI version is not 7 when `old` (as an
    // nvdisasm older than the cubin's toolkit does).
    for (const bool old : {false, true}) {
      std::string& path = old ? old_nvdisasm_ : nvdisasm_;
      path = temp_path(old ? "nvdisasm_old" : "nvdisasm");
      write_script(path, "#!/bin/bash\nin=\"${@: -1}\"\necho \"$in\" > '" + seen_ + "'\n" +
                             (old ? "[ \"$(od -An -tu1 -j8 -N1 \"$in\" | tr -d ' ')\" = 7 ] || "
                                    "{ echo 'nvdisasm fatal : Input file has an unsupported ELF version' >&2; exit 1; }\n"
                                  : "") +
                             "cat '" + listing_ + "'\n");
    }
  }
  Outcome tool(const std::string& args, const std::string& nvdisasm = "",
               const std::string& script = "register_liveness.py") {
    return run_command("python3 bench/cuda/" + script + " '" + cubin_ + "' " + args + " --nvdisasm '" +
                       (nvdisasm.empty() ? nvdisasm_ : nvdisasm) + "'");
  }
  Outcome mix(const std::string& args) { return tool(args, "", "sass_mix.py"); }
  std::string cubin_, listing_, seen_, nvdisasm_, old_nvdisasm_;
};

// The branch graph (a back edge from its offset bits 24-63) and the left-out instruction (register
// fields from its bytes): without either, R2 would not be live at the loop's end.
TEST_F(SassTools, CarriesALoopHeadsReadAroundTheBackEdge) {
  const Outcome o = tool("k_loop --live");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("k_loop: 11 instructions, highest register written R7, peak 6 live registers"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("live at 0x0060: R0 R2-R3 R5-R7"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("OP010 R5, R2, R3  (undecoded)"), std::string::npos) << o.out;
}

// IMAD.WIDE writes a pair and reads its addend as a pair: R8-R9 live from the entry, R6-R7 from it.
TEST_F(SassTools, ModelsWideOperandsAsRegisterPairs) {
  const Outcome entry = tool("k_loop --live --at 0");
  ASSERT_EQ(entry.code, 0) << entry.err;
  EXPECT_NE(entry.out.find("live at 0x0000: R8-R9"), std::string::npos) << entry.out;
  const Outcome after = tool("k_loop --live --at 40");
  EXPECT_NE(after.out.find("live at 0x0040: R0 R2-R3 R6-R7"), std::string::npos) << after.out;
}

// LDSM .4 writes four registers; a guarded write kills nothing (R12 live from the entry); HGMMA
// reads its accumulators (no RZ) and its A fragment; .128 stores read four.
TEST_F(SassTools, ModelsFragmentsAccumulatorsAndGuardedWrites) {
  const Outcome o = tool("k_forms --live");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("k_forms: 6 instructions, highest register written R23, peak 13 live registers"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("live at 0x0010: R8-R12 R16-R23"), std::string::npos) << o.out;
  const Outcome entry = tool("k_forms --live --at 0");
  EXPECT_NE(entry.out.find("live at 0x0000: R2 R12 R16-R23"), std::string::npos) << entry.out;
}

// --path: from the peak, the branch taken back to the read, marked; --who: the writers with the
// innermost source line of the -lineinfo groups.
TEST_F(SassTools, ShowsWhyARegisterIsLiveAndWhoWritesIt) {
  const Outcome path = tool("k_loop --path 2");
  ASSERT_EQ(path.code, 0) << path.err;
  EXPECT_NE(path.out.find("0x0070 @P0 BRA 0x40"), std::string::npos) << path.out;
  EXPECT_NE(path.out.find("0x0040  OP010 R5, R2, R3  <- jumped here"), std::string::npos) << path.out;
  const Outcome dead = tool("k_loop --path 9");
  EXPECT_NE(dead.out.find("R9 is not read again from the peak"), std::string::npos) << dead.out;
  const Outcome who = tool("k_loop --who");
  EXPECT_NE(who.out.find("R6   demo.cu:12 IMAD"), std::string::npos) << who.out;
}

// --region consumer: from setmaxnreg's TRY_ALLOC on, not the producer's code after DEALLOC; the
// whole kernel's peak is the producer's (--region producer: that code alone). R1 is live at the split only through the branch (its
// target from the offset's low byte).
TEST_F(SassTools, KeepsToTheConsumerRegion) {
  const Outcome all = tool("k_split --live");
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find("k_split: 13 instructions, highest register written R21, peak 3 live registers"),
            std::string::npos)
      << all.out;
  EXPECT_NE(all.out.find("live at 0x0070: R0 R20-R21"), std::string::npos) << all.out;
  const Outcome split = tool("k_split --live --at 30");
  EXPECT_NE(split.out.find("live at 0x0030: R0-R1"), std::string::npos) << split.out;
  const Outcome consumer = tool("k_split --region consumer --live");
  ASSERT_EQ(consumer.code, 0) << consumer.err;
  EXPECT_NE(consumer.out.find("k_split: 4 instructions, highest register written R4, peak 2 live registers"),
            std::string::npos)
      << consumer.out;
  EXPECT_NE(consumer.out.find("live at 0x0090: R0-R1"), std::string::npos) << consumer.out;
  // --region producer: what DEALLOC reaches (0x40-0x80), whose registers must fit the count it keeps.
  const Outcome producer = tool("k_split --region producer --live");
  ASSERT_EQ(producer.code, 0) << producer.err;
  EXPECT_NE(producer.out.find("k_split: 5 instructions, highest register written R21, peak 3 live registers"),
            std::string::npos)
      << producer.out;
  EXPECT_NE(producer.out.find("live at 0x0070: R0 R20-R21"), std::string::npos) << producer.out;
}

// An older nvdisasm refuses the header: the error says to try --old-header, which rewrites it in
// a temporary copy (removed afterwards) and leaves the cubin as it was.
TEST_F(SassTools, RewritesTheHeaderForAnOlderDisassemblerOnlyInACopy) {
  const std::string before = read_text(cubin_);
  const Outcome refused = tool("k_loop", old_nvdisasm_);
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.err.find("unsupported ELF version (an nvdisasm older than the cubin's toolkit: try --old-header)"),
            std::string::npos)
      << refused.err;
  const Outcome o = tool("k_loop --old-header", old_nvdisasm_);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("peak 6 live registers"), std::string::npos) << o.out;
  std::string copy = read_text(seen_);
  while (!copy.empty() && copy.back() == '\n') copy.pop_back();
  EXPECT_NE(copy, cubin_);
  EXPECT_FALSE(fs::exists(copy)) << copy;
  EXPECT_EQ(read_text(cubin_), before);
}

TEST_F(SassTools, BadInputGetsOneLineAndExitOne) {
  const Outcome kernel = tool("k_missing");
  EXPECT_EQ(kernel.code, 1);
  EXPECT_EQ(kernel.err, "register_liveness: no kernel whose name contains 'k_missing'\n");
  const Outcome cubin = run_command("python3 bench/cuda/register_liveness.py /nonexistent.cubin k_loop");
  EXPECT_EQ(cubin.code, 1);
  EXPECT_EQ(cubin.err, "register_liveness: cannot read the cubin /nonexistent.cubin: No such file or directory\n");
  const Outcome tool_missing = tool("k_loop", "/nonexistent/nvdisasm");
  EXPECT_EQ(tool_missing.code, 1);
  EXPECT_EQ(tool_missing.err, "register_liveness: cannot run /nonexistent/nvdisasm: No such file or directory\n");
}

// sass_mix.py: the loops from the backward branches, shortest first; a range's instructions under
// the innermost frame of their chain within the file and lines asked for (else the innermost), the
// left-out instruction (no line) apart.
TEST_F(SassTools, MixListsLoopsAndFilesARangeUnderItsSourceLines) {
  const Outcome loops = mix("k_loop --loops");
  ASSERT_EQ(loops.code, 0) << loops.err;
  const size_t self = loops.out.find("loop 0x000a0-0x000a0:     1 instructions, HGMMA 0, MUFU 0");
  const size_t body = loops.out.find("loop 0x00040-0x00070:     4 instructions, HGMMA 0, MUFU 0");
  ASSERT_NE(self, std::string::npos) << loops.out;
  ASSERT_NE(body, std::string::npos) << loops.out;
  EXPECT_LT(self, body) << loops.out;

  const std::string source = temp_path("demo.cu");
  std::ofstream out(source);
  for (int line = 1; line <= 40; ++line) out << (line == 40 ? "  acc = acc + x[i];  // the loop's body\n" : "\n");
  out.close();
  const Outcome grouped = mix("k_loop --range 0x30-0x80 --group demo.cu:30-50 --source '" + source + "'");
  ASSERT_EQ(grouped.code, 0) << grouped.err;
  EXPECT_NE(grouped.out.find("0x00030-0x00080: 6 instructions"), std::string::npos) << grouped.out;
  EXPECT_NE(grouped.out.find("demo.cu:40     4  acc = acc + x[i];  // the loop's body"), std::string::npos)
      << grouped.out;
  EXPECT_NE(grouped.out.find("demo.cu:44     1"), std::string::npos) << grouped.out;  // a group of its own
  EXPECT_NE(grouped.out.find("elsewhere     1"), std::string::npos) << grouped.out;
  const Outcome innermost = mix("k_loop --range 30-80");
  EXPECT_NE(innermost.out.find("demo.cu:12     4"), std::string::npos) << innermost.out;
  EXPECT_NE(innermost.out.find("no line     1"), std::string::npos) << innermost.out;
}

// --loop: the natural loop (what reaches the back edge from the head), not the exit path placed in
// its range; --range takes the whole range.
TEST_F(SassTools, MixTakesALoopsPathsNotItsWholeRange) {
  const Outcome listed = mix("k_cold --loops");
  ASSERT_EQ(listed.code, 0) << listed.err;
  EXPECT_NE(listed.out.find("loop 0x00020-0x00070:     6 instructions"), std::string::npos) << listed.out;
  const Outcome loop = mix("k_cold --loop 0x20-0x70");
  ASSERT_EQ(loop.code, 0) << loop.err;
  EXPECT_NE(loop.out.find("0x00020-0x00070: 4 instructions on its paths (6 in its range)"), std::string::npos)
      << loop.out;
  EXPECT_NE(loop.out.find("no line     4"), std::string::npos) << loop.out;
  const Outcome range = mix("k_cold --range 0x20-0x70");
  EXPECT_NE(range.out.find("0x00020-0x00070: 6 instructions\n"), std::string::npos) << range.out;
  const Outcome none = mix("k_cold --loop 0x20-0x60");
  EXPECT_EQ(none.code, 1);
  EXPECT_EQ(none.err, "sass_mix: no loop 0x20-0x60 (a backward branch at 0x60 to 0x20: see --loops)\n");
}

TEST_F(SassTools, MixRefusesBadArgumentsWithOneLine) {
  const Outcome range = mix("k_loop --range 0x80");
  EXPECT_EQ(range.code, 2);
  EXPECT_NE(range.err.find("argument --range: '0x80' is not LO-HI (hex addresses)"), std::string::npos) << range.err;
  const Outcome nothing = mix("k_loop");
  EXPECT_EQ(nothing.code, 2);
  EXPECT_NE(nothing.err.find("say --loops, --loop HEAD-BRANCH or --range LO-HI"), std::string::npos) << nothing.err;
  const Outcome both = mix("k_cold --loop 0x20-0x70 --range 0x20-0x70");
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("--loop and --range are two ways to choose the instructions: say one"), std::string::npos)
      << both.err;
  const Outcome kernel = mix("k_missing --loops");
  EXPECT_EQ(kernel.code, 1);
  EXPECT_EQ(kernel.err, "sass_mix: no kernel whose name contains 'k_missing'\n");
}

}  // namespace
}  // namespace samebits
