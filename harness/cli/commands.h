// The `samebits` subcommands. Each returns the process exit code:
// 0 pass, 1 divergence in invariant mode or golden mismatch, 2 usage or input error.
#pragma once
#include <string>

#include "harness/scenario/experiment.h"

namespace samebits::cli {

inline constexpr int kExitPass = 0;
inline constexpr int kExitDiverged = 1;
inline constexpr int kExitInputError = 2;

struct RunArgs {
  std::string scenario;
  std::string mode = "";  // default | invariant | both; "" = the scenario's modes
  ExperimentOptions options;
  bool progress = true;  // a progress line per mode on stderr where one belongs (a terminal, not CI)
  std::string json, markdown, junit, trace, html;
  bool explain = false;  // run: localise every fork after the run (samebits explain)
  int max_forks = 8;
  std::string golden_dir;  // "" = default_golden_dir(scenario)
};

int run_command(const RunArgs& args);
int golden_check_command(const RunArgs& args);
int golden_update_command(const RunArgs& args);
int compare_command(const std::string& a, const std::string& b);
int replay_command(const std::string& trace, const std::string& json);
int info_command();

struct ExplainArgs {
  std::string results;  // RESULTS.json from run --json
  std::string trace;    // optional: the run's trace (required for live runs); else the scenario is re-run
  std::string html, markdown;
  int threads = 0;
  int max_forks = 8;
};
int explain_command(const ExplainArgs& args);

// One ProgressLine per mode on stderr, cleared when the mode ends.
ProgressCallback progress_on_stderr();

// Prints "samebits: error: <message>" on stderr and returns kExitInputError.
int input_error(const std::string& message);

}  // namespace samebits::cli
