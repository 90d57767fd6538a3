#include "tests/mutation/detection.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "harness/cli/commands.h"
#include "harness/golden/results.h"
#include "kernels/fixed_math.h"
#include "tests/engine/invariance_sweep.h"

namespace samebits::testing {

bool GateOutcome::caught() const {
  if (exit_code != cli::kExitDiverged) return false;
  const bool names_step = state == "mismatch" && detail.find("first differs at step") != std::string::npos;
  return names_step || unique_logit_streams > 1;
}

std::string source_root() {
  const char* env = std::getenv("SAMEBITS_SOURCE_DIR");
  return env != nullptr && *env != '\0' ? env : SAMEBITS_SOURCE_DIR;
}

GateOutcome run_gate(const Backend& backend, int threads) {
  const std::string name = "mutation-gate";
  register_backend(name, &backend);
  const std::string json = (std::filesystem::temp_directory_path() /
                            absl::StrCat("samebits_mutation_gate_", ::getpid(), ".json")).string();
  cli::RunArgs args;
  args.scenario = source_root() + "/scenarios/mutation.yaml";
  args.mode = "invariant";
  args.options.backend = name;
  args.options.threads = threads;
  args.json = json;
  GateOutcome out;
  std::fflush(stdout);
  out.exit_code = cli::golden_check_command(args);
  std::fflush(stdout);
  register_backend(name, nullptr);
  auto results = read_results_file(json);
  std::filesystem::remove(json);
  if (results.ok()) {
    if (const ModeResult* m = results->find(Mode::kInvariant)) {
      out.state = m->golden.state;
      out.detail = m->golden.detail;
      out.unique_logit_streams = m->unique_logit_streams();
    }
  } else {
    out.detail = std::string(results.status().message());
  }
  return out;
}

namespace {

// The sample op's own sweep: one row's draws (temperature 1 over a flat distribution, uniform from
// (seed, step)) alone and inside batches of 3 and 8 rows at several positions must give the same
// token. "" when they do, else where they differ. (The engine sweep's model is too sure of itself
// for a wrong uniform to change its draws.)
std::string sample_sweep(const Backend& b) {
  constexpr int64_t kVocab = 258, kMaxRows = 8;
  auto logits_of = [&](uint64_t seed) {
    std::vector<float> row(kVocab);
    for (int64_t v = 0; v < kVocab; ++v) row[size_t(v)] = float(4 * sampling_uniform(seed, uint64_t(v)) - 2);
    return row;
  };
  auto logits_mem = b.alloc(size_t(kMaxRows * kVocab) * sizeof(float));
  auto out_mem = b.alloc(size_t(kMaxRows) * sizeof(int32_t));
  if (!logits_mem.ok() || !out_mem.ok()) return "cannot allocate";
  std::string found;
  auto draw = [&](int64_t rows, int64_t position, uint64_t step) -> int32_t {
    std::vector<float> logits;
    std::vector<SamplingRow> params(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      const uint64_t seed = r == position ? 77 : 1000 + uint64_t(r);
      const std::vector<float> row = logits_of(seed);
      logits.insert(logits.end(), row.begin(), row.end());
      params[size_t(r)] = SamplingRow{1.f, 0, 1.f, sampling_uniform(seed, step)};
    }
    ExecContext ctx;
    SampleArgs a;
    a.logits = static_cast<float*>(*logits_mem), a.rows = rows, a.vocab = kVocab, a.params = params.data();
    a.out = static_cast<int32_t*>(*out_mem);
    std::vector<int32_t> tokens(size_t(rows), -1);
    if (!b.upload(*logits_mem, logits.data(), logits.size() * sizeof(float)).ok() || !b.sample(ctx, a).ok() ||
        !b.synchronize(ctx).ok() || !b.download(tokens.data(), *out_mem, tokens.size() * sizeof(int32_t)).ok())
      return -2;
    return tokens[size_t(position)];
  };
  for (uint64_t step = 0; step < 8 && found.empty(); ++step) {
    const int32_t alone = draw(1, 0, step);
    for (int64_t rows : {3, 8}) {
      for (int64_t position : {int64_t(1), rows - 1}) {
        const int32_t inside = draw(rows, position, step);
        if (inside != alone && found.empty())
          found = absl::StrCat("sample op: step ", step, " alone drew ", alone, ", at row ", position, " of ", rows,
                               " drew ", inside);
      }
    }
  }
  b.free(*logits_mem);
  b.free(*out_mem);
  return found;
}

}  // namespace

Detection detect(const Backend& real, const Mutant& mutant, int gate_threads) {
  Detection d;
  d.source = mutant.name;
  const Backend& planted = mutant_backend(real, mutant.source);
  SweepOptions options;
  options.stop_at_first_difference = true;
  SweepReport sweep = run_invariance_sweep(planted, Mode::kInvariant, options);
  const std::string sampler = sample_sweep(planted);
  d.sweep_caught = sweep.error.empty() && (sweep.cases_differing > 0 || !sampler.empty());
  d.sweep_detail = !sweep.error.empty()       ? "error: " + sweep.error
                   : sweep.cases_differing > 0 ? "engine: " + sweep.first_differing
                   : !sampler.empty()          ? sampler + " (engine: no difference in " +
                                                    std::to_string(sweep.cases_run) + " cases)"
                                               : absl::StrCat("no difference in ", sweep.cases_run,
                                                              " engine cases nor in the sample op's sweep");
  GateOutcome gate = run_gate(mutant_backend(real, mutant.source), gate_threads);
  d.gate_caught = gate.caught();
  d.gate_detail = absl::StrCat("exit ", gate.exit_code, ", ", gate.state, ": ", gate.detail,
                               gate.unique_logit_streams > 1 ? absl::StrCat(" (", gate.unique_logit_streams,
                                                                             " logit streams)")
                                                             : "");
  return d;
}

std::string detection_table(const std::string& backend_id, const std::vector<Detection>& rows) {
  std::string out = absl::StrFormat("mutation detection table, backend %s\n", backend_id);
  out += absl::StrFormat("| %-20s | %-8s | %-8s |\n|%s|%s|%s|\n", "source", "sweep", "gate", std::string(22, '-'),
                         std::string(10, '-'), std::string(10, '-'));
  for (const Detection& d : rows) {
    out += absl::StrFormat("| %-20s | %-8s | %-8s |\n", d.source, d.sweep_caught ? "caught" : "MISSED",
                           d.gate_caught ? "caught" : "MISSED");
  }
  for (const Detection& d : rows) {
    out += absl::StrFormat("  %s\n    sweep: %s\n    gate:  %s\n", d.source, d.sweep_detail, d.gate_detail);
  }
  return out;
}

}  // namespace samebits::testing
