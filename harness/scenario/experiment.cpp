#include "harness/scenario/experiment.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "harness/scenario/live.h"
#include "harness/client/client_run.h"
#include "models/tiny_qwen/tokenizer.h"

namespace samebits {

absl::StatusOr<Scenario> load_with_overrides(const std::string& path, const ExperimentOptions& o) {
  auto sc = load_scenario(path);
  if (!sc.ok()) return sc.status();
  if (!o.backend.empty()) sc->backend = o.backend;
  if (!o.modes.empty()) sc->modes = o.modes;
  if (o.samples > 0) sc->samples = o.samples;
  if (!o.model.empty()) sc->model = o.model;
  if (o.clients > 0) sc->live.clients = o.clients;
  if (o.in_process) sc->target.reset();
  if (!o.target_url.empty()) {
    if (!sc->target && o.target_model.empty())
      return absl::InvalidArgumentError(absl::StrCat(path, ": --target-url needs --target-model (the scenario names no target)"));
    if (!sc->target) sc->target = TargetSettings{};
    sc->target->url = o.target_url;
  }
  if (!o.target_model.empty()) {
    if (!sc->target) return absl::InvalidArgumentError(absl::StrCat(path, ": --target-model needs a target (--target-url)"));
    sc->target->model = o.target_model;
  }
  return sc;
}

absl::StatusOr<std::string> scenario_backend_id(const Scenario& sc) {
  if (sc.target) return client::target_backend_id(sc.target->model);
  std::string why;
  const Backend* backend = find_backend(sc.backend, &why);
  if (!backend) return absl::FailedPreconditionError(absl::StrCat("backend ", sc.backend, ": ", why));
  return backend->id;
}

namespace {

// Client mode: the workload against the scenario's target, one run labelled with the server's mode.
absl::Status run_client_mode(Experiment& e, const ExperimentOptions& o) {
  const TargetSettings& t = *e.scenario.target;
  auto info = client::query_server(t);
  if (!info.ok()) return absl::Status(info.status().code(), absl::StrCat(e.scenario.file, ": ", info.status().message()));
  Mode mode = Mode::kDefault;
  if (!t.mode.empty()) mode = *parse_mode(t.mode);
  else if (info->mode) mode = *info->mode;
  if (info->mode && *info->mode != mode)
    return absl::InvalidArgumentError(absl::StrCat(e.scenario.file, ": target.mode: ", t.mode, " but the server runs in ",
                                                   std::string(mode_name(*info->mode)), " mode"));
  client::TokenTexts texts;
  client::ClientRunFigures figures;
  std::function<void(int, int)> report_samples;
  if (o.progress) {
    o.progress({mode, 0, e.workload.samples, false});
    report_samples = [&](int done, int total) { o.progress({mode, done, total, false}); };
  }
  auto run = client::run_against_target(e.scenario, e.workload, mode, &texts, &figures, report_samples);
  if (o.progress) o.progress({mode, run.ok() ? e.workload.samples : 0, e.workload.samples, true});
  if (!run.ok()) return absl::Status(run.status().code(), absl::StrCat(t.url, ": ", run.status().message()));
  ServedTarget served{t.model, info->card, info->is_samebits ? info->weights_digest : info->card_digest, e.backend_id,
                      absl::StrCat(t.api, " API at ", t.url,
                                   info->is_samebits ? " (samebits serve, " + info->backend_id + ")" : "",
                                   figures.samebits_digests ? "; digests over token ids and fp32 logits"
                                                            : "; digests over returned tokens and logprobs"),
                      info->kernel_set_version};
  e.results.identity = make_client_identity(e.scenario, served, e.workload.samples);
  RunResults& r = e.results;
  r.modes.push_back(analyze_mode(mode, run->targets, run->figures, texts));
  e.runs.push_back(std::move(*run));
  return absl::OkStatus();
}

}  // namespace

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
  auto backend_id = scenario_backend_id(e.scenario);
  if (!backend_id.ok()) return backend_id.status();
  e.backend_id = *backend_id;
  if (e.scenario.target) {
    auto workload = generate_workload(e.scenario, ByteTokenizer());  // prompts go out as text: bytes after BOS
    if (!workload.ok()) return workload.status();
    e.workload = std::move(*workload);
    if (absl::Status s = run_client_mode(e, o); !s.ok()) return s;
    return e;
  }
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
    setup.graphs = o.graphs;
    setup.schedule_ahead = o.schedule_ahead;
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
