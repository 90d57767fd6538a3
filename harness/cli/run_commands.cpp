// run, golden check, golden update: one experiment, then goldens and outputs.
#include <cstdio>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "harness/cli/commands.h"
#include "harness/explain/explain.h"
#include "harness/golden/golden_store.h"
#include "harness/golden/json_fields.h"
#include "harness/report/report.h"

namespace samebits::cli {

int input_error(const std::string& message) {
  std::fprintf(stderr, "samebits: error: %s\n", message.c_str());
  return kExitInputError;
}

ProgressCallback progress_on_stderr() {
  auto line = std::make_shared<std::unique_ptr<ProgressLine>>();
  return [line](const ProgressEvent& e) {
    if (e.finished) {
      line->reset();
      return;
    }
    if (!*line) *line = std::make_unique<ProgressLine>(std::string(mode_name(e.mode)), true);
    (*line)->update(e.done, e.total);
  };
}

namespace {

ExperimentOptions options_of(const RunArgs& a) {
  ExperimentOptions o = a.options;
  if (a.progress && ProgressLine::wanted_on_stderr()) o.progress = progress_on_stderr();
  if (a.mode == "default") o.modes = {Mode::kDefault};
  if (a.mode == "invariant") o.modes = {Mode::kInvariant};
  if (a.mode == "both") o.modes = {Mode::kDefault, Mode::kInvariant};
  return o;
}

std::string golden_file(const RunArgs& a, const Experiment& e) {
  const std::string dir = a.golden_dir.empty() ? default_golden_dir(a.scenario) : a.golden_dir;
  return golden_path(dir, e.scenario.name, e.backend_id);
}

// Stages every output the arguments name; nothing reaches its target until `outputs` commit.
absl::Status stage_outputs(const RunArgs& a, const Experiment& e, OutputFiles* outputs,
                           const ExplainReport* explained = nullptr) {
  if (!a.json.empty())
    if (absl::Status s = write_results_file(e.results, a.json, outputs); !s.ok()) return s;
  if (!a.markdown.empty())
    if (absl::Status s = outputs->stage(a.markdown, format_markdown(e.results, explained)); !s.ok()) return s;
  if (!a.html.empty())
    if (absl::Status s = outputs->stage(a.html, format_html(e.results, explained)); !s.ok()) return s;
  if (!a.junit.empty())
    if (absl::Status s = outputs->stage(a.junit, format_junit(e.results)); !s.ok()) return s;
  if (!a.trace.empty()) {
    if (e.scenario.target) return absl::InvalidArgumentError("--trace: client mode has no engine schedule to record");
    if (absl::Status s = write_trace(e.trace(), a.trace, outputs); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status write_outputs(const RunArgs& a, const Experiment& e, const ExplainReport* explained = nullptr) {
  OutputFiles outputs;
  if (absl::Status s = stage_outputs(a, e, &outputs, explained); !s.ok()) return s;
  return outputs.commit();
}

// The golden the run will be checked against (or update), read before minutes of work: a
// malformed golden file is an input error up front.
absl::StatusOr<std::optional<Golden>> read_existing_golden(const RunArgs& a, const ExperimentOptions& o,
                                                           std::string* path = nullptr) {
  auto sc = load_with_overrides(a.scenario, o);
  if (!sc.ok()) return sc.status();
  auto backend_id = scenario_backend_id(*sc);
  if (!backend_id.ok()) return backend_id.status();
  const std::string dir = a.golden_dir.empty() ? default_golden_dir(a.scenario) : a.golden_dir;
  const std::string file = golden_path(dir, sc->name, *backend_id);
  if (path) *path = file;
  return read_golden(file);
}

// Runs the experiment and checks its golden. On success *exit_code is the gate's verdict.
absl::StatusOr<Experiment> run_and_check(const RunArgs& a, bool keep_records, std::optional<Golden>* golden_out) {
  ExperimentOptions o = options_of(a);
  o.keep_records = keep_records || !a.trace.empty();
  auto golden = read_existing_golden(a, o);
  if (!golden.ok()) return golden.status();
  auto e = run_experiment(a.scenario, o);
  if (!e.ok()) return e.status();
  check_against_golden(*golden, &e->results);
  if (golden_out) *golden_out = std::move(*golden);
  return e;
}

// The default mode of a scenario that expects divergence showed none: "" when it did (or when the
// scenario does not expect it, or default mode did not run).
std::string lost_sight(const Experiment& e) {
  if (!e.scenario.expect_default_divergence) return "";
  const ModeResult* m = e.results.find(Mode::kDefault);
  if (m == nullptr || m->unique_logit_streams() > 1) return "";
  return absl::StrCat("default mode showed no divergence (one logit stream over ", m->samples,
                      " samples) where scenario ", e.scenario.file,
                      " expects it: the harness cannot see batch variance (set expect_default_divergence: false "
                      "only for a scenario too small to diverge)");
}

int verdict(const RunResults& r) {
  for (const ModeResult& m : r.modes)
    if (!mode_passes(m)) return kExitDiverged;
  return kExitPass;
}

}  // namespace

int run_command(const RunArgs& a) {
  auto e = run_and_check(a, a.explain, nullptr);
  if (!e.ok()) return input_error(std::string(e.status().message()));
  std::cout << format_table(e->results);
  std::optional<ExplainReport> explained;
  if (a.explain) {
    ExplainOptions options;
    options.max_forks = a.max_forks;
    auto report = explain_run(e->trace(), e->results, e->model, *e->backend, options);
    if (!report.ok()) return input_error(std::string(report.status().message()));
    explained = std::move(*report);
    std::cout << format_explain_report(*explained);
  }
  if (absl::Status s = write_outputs(a, *e, explained ? &*explained : nullptr); !s.ok())
    return input_error(std::string(s.message()));
  return verdict(e->results);
}

int golden_check_command(const RunArgs& a) {
  std::optional<Golden> golden;
  auto e = run_and_check(a, false, &golden);
  if (!e.ok()) return input_error(std::string(e.status().message()));
  std::cout << format_table(e->results);
  if (absl::Status s = write_outputs(a, *e); !s.ok()) return input_error(std::string(s.message()));
  const int v = verdict(e->results);
  if (v != kExitPass) return v;
  if (std::string why = lost_sight(*e); !why.empty()) {
    std::fprintf(stderr, "samebits: golden check failed: %s\n", why.c_str());
    return kExitDiverged;
  }
  for (const ModeResult& m : e->results.modes) {
    if (m.golden.state != "pass")
      return input_error(absl::StrCat("cannot check ", std::string(mode_name(m.mode)), " mode against ", golden_file(a, *e), ": ",
                                      m.golden.state, " (", m.golden.detail, ")"));
  }
  std::printf("golden check passed: %s\n", golden_file(a, *e).c_str());
  return kExitPass;
}

int golden_update_command(const RunArgs& a) {
  ExperimentOptions o = options_of(a);
  // The existing golden is read before the run: modes not run now keep their entry, so a golden
  // that cannot be read is an error (delete it to start afresh), never silently replaced.
  std::string old_path;
  auto old = read_existing_golden(a, o, &old_path);
  if (!old.ok() && !old_path.empty())
    return input_error(absl::StrCat(old.status().message(), " (golden not updated; delete the file to write a new one)"));
  if (!old.ok()) return input_error(std::string(old.status().message()));
  auto e = run_experiment(a.scenario, o);
  if (!e.ok()) return input_error(std::string(e.status().message()));
  std::cout << format_table(e->results);
  for (const ModeResult& m : e->results.modes) {
    if (!invariance_holds(m)) {
      std::fprintf(stderr, "samebits: invariant mode diverged; refusing to record it as golden\n");
      return kExitDiverged;
    }
  }
  if (std::string why = lost_sight(*e); !why.empty()) {
    std::fprintf(stderr, "samebits: refusing to record a golden: %s\n", why.c_str());
    return kExitDiverged;
  }
  const std::string path = golden_file(a, *e);
  // Modes not run now keep their golden entry when the new identity does not differ in a field
  // that mode depends on.
  Golden fresh = golden_from_results(e->results);
  if (old->has_value()) {
    for (const GoldenMode& m : (*old)->modes)
      if (!fresh.find(m.mode) && incomparability((*old)->identity, fresh.identity, m.mode).empty())
        fresh.modes.push_back(m);
  }
  // The other outputs first, the golden last: nothing is written unless all of them can be.
  OutputFiles outputs;
  if (absl::Status s = stage_outputs(a, *e, &outputs); !s.ok()) return input_error(std::string(s.message()));
  if (absl::Status s = write_golden(fresh, path, &outputs); !s.ok()) return input_error(std::string(s.message()));
  if (absl::Status s = outputs.commit(); !s.ok()) return input_error(std::string(s.message()));
  std::printf("golden written: %s\n", path.c_str());
  return kExitPass;
}

}  // namespace samebits::cli
