// explain: the forks of a results file, localised op by op. The schedules come from the run's trace
// when given, else from running the scenario again (a seeded schedule is the same every run; the
// re-run's digests are checked against the results file).
#include <cstdio>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "harness/cli/commands.h"
#include "harness/explain/explain.h"
#include "harness/golden/digest.h"
#include "harness/golden/json_fields.h"
#include "harness/report/report.h"

namespace samebits::cli {
namespace {

// Samples whose logit stream differs between the file and the re-run or trace; -1 when none.
int first_mismatch(const ModeResult& m, const std::vector<uint64_t>& digests) {
  if (digests.size() != m.per_sample.size()) return 0;
  for (const SampleSummary& s : m.per_sample)
    if (m.streams[size_t(s.stream)].digest != digests[size_t(s.sample)]) return s.sample;
  return -1;
}

// The modes of `results` that diverged (the others need no replay).
std::vector<Mode> diverged_modes(const RunResults& results) {
  std::vector<Mode> modes;
  for (const ModeResult& m : results.modes)
    if (m.unique_logit_streams() > 1 || m.unique_completions() > 1) modes.push_back(m.mode);
  return modes;
}

}  // namespace

int explain_command(const ExplainArgs& a) {
  auto results = read_results_file(a.results);
  if (!results.ok()) return input_error(std::string(results.status().message()));
  RunResults& r = *results;

  Trace trace;
  ModelSource model;
  const Backend* backend = nullptr;
  std::string why;
  if (!a.trace.empty()) {
    auto t = read_trace(a.trace);
    if (!t.ok()) return input_error(std::string(t.status().message()));
    trace = std::move(*t);
    if (trace.identity.scenario.file_hash != r.identity.scenario.file_hash || trace.identity.model.weights_digest != r.identity.model.weights_digest)
      return input_error(absl::StrCat(a.trace, ": not the trace of ", a.results, " (scenario or weights differ)"));
    backend = find_backend(trace.identity.backend.name, &why);
    if (!backend) return input_error(absl::StrCat(a.trace, ": backend ", trace.identity.backend.name, ": ", why));
    auto m = resolve_model(trace.identity.model.spec);
    if (!m.ok()) return input_error(std::string(m.status().message()));
    model = std::move(*m);
  } else {
    if (r.identity.live) return input_error(absl::StrCat(a.results, ": live: a live run's schedule cannot be re-run; pass its --trace"));
    ExperimentOptions o;
    o.backend = r.identity.backend.name;
    o.modes = diverged_modes(r);
    o.samples = r.identity.samples;
    o.model = r.identity.model.spec;
    o.threads = a.threads;
    o.keep_records = true;
    if (ProgressLine::wanted_on_stderr()) o.progress = progress_on_stderr();
    if (o.modes.empty()) {
      std::printf("%s: every mode gave one completion and one logit stream: nothing to explain\n", a.results.c_str());
      return kExitPass;
    }
    auto sc = load_with_overrides(r.identity.scenario.file, o);
    if (!sc.ok()) return input_error(std::string(sc.status().message()));
    if (sc->file_hash != r.identity.scenario.file_hash)
      return input_error(absl::StrCat(a.results, ": identity.scenario.file_hash: ", digest_hex(r.identity.scenario.file_hash), " but ", r.identity.scenario.file,
                                      " now hashes to ", digest_hex(sc->file_hash), " (the scenario changed since the run)"));
    std::fprintf(stderr, "explain: running %s again to recover its schedules (or pass --trace)\n", r.identity.scenario.file.c_str());
    auto e = run_experiment(r.identity.scenario.file, o);
    if (!e.ok()) return input_error(std::string(e.status().message()));
    if (e->model.weights_digest != r.identity.model.weights_digest)
      return input_error(absl::StrCat(a.results, ": identity.model.weights_digest: ", digest_hex(r.identity.model.weights_digest), " but the model now has ",
                                      digest_hex(e->model.weights_digest)));
    trace = e->trace();
    model = std::move(e->model);
    backend = e->backend;
  }
  if (backend->id != r.identity.backend.id)
    return input_error(absl::StrCat(a.results, ": identity.backend.id: ", r.identity.backend.id, " but this machine's backend is ", backend->id));

  // Explain what the file holds; if the replayed digests differ, say so (the bits moved since).
  RunResults wanted = r;
  wanted.modes.clear();
  for (const ModeResult& m : r.modes) {
    const TraceRun* run = nullptr;
    for (const TraceRun& t : trace.runs)
      if (t.mode == m.mode) run = &t;
    if (!run) continue;
    if (const int s = first_mismatch(m, run->digests); s >= 0)
      std::fprintf(stderr, "explain: warning: %s mode: sample %d's digests differ between %s and the schedule replayed now\n",
                   std::string(mode_name(m.mode)).c_str(), s, a.results.c_str());
    wanted.modes.push_back(m);
  }
  ExplainOptions options;
  options.max_forks = a.max_forks;
  auto report = explain_run(trace, wanted, model, *backend, options);
  if (!report.ok()) return input_error(std::string(report.status().message()));
  std::cout << format_explain_report(*report);
  OutputFiles outputs;  // both or neither
  if (!a.markdown.empty())
    if (absl::Status s = outputs.stage(a.markdown, format_markdown(r, &*report)); !s.ok()) return input_error(std::string(s.message()));
  if (!a.html.empty())
    if (absl::Status s = outputs.stage(a.html, format_html(r, &*report)); !s.ok()) return input_error(std::string(s.message()));
  if (absl::Status s = outputs.commit(); !s.ok()) return input_error(std::string(s.message()));
  return kExitPass;
}

}  // namespace samebits::cli
