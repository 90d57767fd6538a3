#include "harness/scenario/experiment.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "harness/scenario/live.h"

namespace samebits {

absl::StatusOr<Scenario> load_with_overrides(const std::string& path, const ExperimentOptions& o) {
  auto sc = load_scenario(path);
  if (!sc.ok()) return sc.status();
  if (!o.backend.empty()) sc->backend = o.backend;
  if (!o.modes.empty()) sc->modes = o.modes;
  if (o.samples > 0) sc->samples = o.samples;
  if (!o.model.empty()) sc->model = o.model;
  if (o.clients > 0) sc->live.clients = o.clients;
  return sc;
}

RunResults make_results(const RunIdentity& identity, const TextTokenizer& tokenizer, std::vector<ModeRun>& runs) {
  RunResults r;
  r.identity = identity;
  for (ModeRun& run : runs) r.modes.push_back(analyze_mode(run.mode, run.targets, run.figures, tokenizer));
  return r;
}

absl::StatusOr<Experiment> run_experiment(const std::string& path, const ExperimentOptions& o) {
  Experiment e;
  auto sc = load_with_overrides(path, o);
  if (!sc.ok()) return sc.status();
  e.scenario = std::move(*sc);
  std::string why;
  e.backend = find_backend(e.scenario.backend, &why);
  if (!e.backend) return absl::FailedPreconditionError(absl::StrCat("backend ", e.scenario.backend, ": ", why));
  const int64_t rss_baseline = host_rss_bytes().current;  // the backend (CUDA context) started, no model yet
  auto model = resolve_model(e.scenario.model);
  if (!model.ok()) return model.status();
  e.model = std::move(*model);
  auto workload = generate_workload(e.scenario, *e.model.tokenizer);
  if (!workload.ok()) return workload.status();
  e.workload = std::move(*workload);

  for (Mode mode : e.scenario.modes) {
    std::function<void(int, int)> report_samples;
    if (o.progress) {
      o.progress({mode, 0, e.workload.samples, false});
      report_samples = [&](int done, int total) { o.progress({mode, done, total, false}); };
    }
    RunSetup setup{&e.scenario, &e.model, e.backend, o.threads, o.keep_records || o.live, report_samples};
    setup.profile = o.profile;
    setup.rss_baseline_bytes = rss_baseline;
    auto run = o.live ? run_live(setup, e.workload, mode) : run_simulated(setup, e.workload, mode);
    if (o.progress) o.progress({mode, run.ok() ? e.workload.samples : 0, e.workload.samples, true});
    if (!run.ok()) return absl::Status(run.status().code(), absl::StrCat(std::string(mode_name(mode)), " mode: ", run.status().message()));
    e.runs.push_back(std::move(*run));
  }
  e.results = make_results(make_run_identity(e.scenario, e.model.description, e.model.weights_digest, *e.backend,
                                             e.workload.samples, o.threads, o.live),
                           *e.model.tokenizer, e.runs);
  return e;
}

Trace Experiment::trace() const {
  Trace t = make_trace(results.identity, workload);
  for (const ModeRun& run : runs) t.runs.push_back(trace_run_of(run));
  return t;
}

std::string default_golden_dir(const std::string& scenario_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::absolute(fs::path(scenario_path), ec).parent_path();
  if (!ec && dir.filename() == "scenarios") return (dir.parent_path() / "golden").string();
  return (fs::path(SAMEBITS_SOURCE_DIR) / "golden").string();
}

}  // namespace samebits
