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
#include "tests/mutation/op_sweep.h"

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

Detection detect(const Backend& real, const Mutant& mutant, int gate_threads) {
  Detection d;
  d.source = mutant.name;
  d.gate_marginal = mutant.gate_marginal;
  const Backend& planted = mutant_backend(real, mutant.source);
  SweepOptions options;
  options.stop_at_first_difference = true;
  const SweepReport sweep = run_invariance_sweep(planted, Mode::kInvariant, options);
  const std::string ops = op_sweeps(planted);
  d.engine_caught = sweep.error.empty() && sweep.cases_differing > 0;
  d.ops_caught = !ops.empty();
  d.sweep_caught = d.engine_caught || d.ops_caught;
  d.sweep_detail = absl::StrCat(
      "engine: ", !sweep.error.empty() ? "error: " + sweep.error
                  : d.engine_caught    ? sweep.first_differing
                                       : absl::StrCat("no difference in ", sweep.cases_run, " cases"),
      "; ops: ", ops.empty() ? "no difference" : ops);
  GateOutcome gate = run_gate(mutant_backend(real, mutant.source), gate_threads);
  d.gate_caught = gate.caught();
  d.gate_detail = absl::StrCat("exit ", gate.exit_code, ", ", gate.state, ": ", gate.detail,
                               gate.unique_logit_streams > 1 ? absl::StrCat(" (", gate.unique_logit_streams,
                                                                             " logit streams)")
                                                             : "");
  return d;
}

std::string detection_misses(const Mutant& mutant, const Detection& d) {
  const std::string what = absl::StrCat(mutant.name, " (", mutant.description, ")");
  if (mutant.gate_marginal) {
    return d.ops_caught ? "" : absl::StrCat(what, " missed by the op sweep: ", d.sweep_detail);
  }
  std::string out;
  if (!d.sweep_caught) absl::StrAppend(&out, what, " missed by the sweep: ", d.sweep_detail, "\n");
  if (!d.gate_caught) absl::StrAppend(&out, what, " missed by the gate: ", d.gate_detail, "\n");
  return out;
}

std::string detection_table(const std::string& backend_id, const std::vector<Detection>& rows) {
  auto mark = [](bool caught) { return caught ? "caught" : "MISSED"; };
  auto gate_mark = [](const Detection& d) { return d.gate_caught ? "caught" : d.gate_marginal ? "marginal" : "MISSED"; };
  auto seen = [](bool caught) { return caught ? "caught" : "-"; };  // one sweep of the two
  std::string out = absl::StrFormat(
      "mutation detection table, backend %s (sweep = engine or op sweep; gate = golden check)\n", backend_id);
  out += absl::StrFormat("| %-20s | %-12s | %-8s | %-8s | %-8s |\n", "source", "engine sweep", "op sweep", "sweep",
                         "gate");
  out += absl::StrFormat("|%s|%s|%s|%s|%s|\n", std::string(22, '-'), std::string(14, '-'), std::string(10, '-'),
                         std::string(10, '-'), std::string(10, '-'));
  for (const Detection& d : rows) {
    out += absl::StrFormat("| %-20s | %-12s | %-8s | %-8s | %-8s |\n", d.source, seen(d.engine_caught),
                           seen(d.ops_caught), mark(d.sweep_caught), gate_mark(d));
  }
  for (const Detection& d : rows) {
    out += absl::StrFormat("  %s\n    sweep: %s\n    gate:  %s\n", d.source, d.sweep_detail, d.gate_detail);
  }
  return out;
}

}  // namespace samebits::testing
