#include "tests/engine/invariance_sweep.h"

#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"

namespace samebits::testing {
namespace {

// A case's kind: its name up to the first '=', ',' or ':', without trailing digits ("mix 3: ..."
// and "mix 5: ..." are both "mix").
std::string case_kind(const std::string& name) {
  std::string kind = name.substr(0, name.find_first_of("=,:"));
  while (!kind.empty() && (kind.back() == ' ' || (kind.back() >= '0' && kind.back() <= '9'))) kind.pop_back();
  return kind;
}

}  // namespace

SweepReport run_invariance_sweep(const Backend& backend, Mode mode, const SweepOptions& options) {
  std::map<int, std::unique_ptr<Model>> models;  // by KV block size
  auto run = [&](const InvarianceCase& c) {
    std::unique_ptr<Model>& m = models[c.config.block_size];
    if (!m) m = make_model(engine_test_config("tiny"), 4096 / c.config.block_size, c.config.block_size, 1, &backend);
    EngineConfig config = c.config;
    config.exec.mode = mode;
    if (!m) {
      RunOutcome failed;
      failed.error = "cannot create the model on backend " + backend.id;
      return failed;
    }
    return run_workload(*m, config, c.arrivals);
  };
  SweepReport report;
  std::map<uint64_t, Observed> refs;
  for (const InvarianceCase& c : reference_cases()) {
    RunOutcome o = run(c);
    if (!o.error.empty()) {
      report.error = c.name + ": " + o.error;
      return report;
    }
    for (auto& [id, obs] : o.observed) refs[id] = obs;
  }
  const std::vector<InvarianceCase> cases = invariance_cases();
  // one_case_per_kind: the last case of each kind, the cheapest one (the largest chunk cap, budget
  // and block size; the first cases, chunk 1 and block size 1, take hundreds of steps).
  std::map<std::string, size_t> last_of_kind;
  for (size_t i = 0; i < cases.size(); ++i) last_of_kind[case_kind(cases[i].name)] = i;
  for (size_t i = 0; i < cases.size(); ++i) {
    const InvarianceCase& c = cases[i];
    if (c.thread_count_only && !options.thread_cases) continue;
    if (options.one_case_per_kind && last_of_kind[case_kind(c.name)] != i) continue;
    ++report.cases_selected;
    RunOutcome o = run(c);
    if (!o.error.empty()) {
      report.error = c.name + ": " + o.error;
      return report;
    }
    ++report.cases_run;
    bool differs = false;
    for (const auto& [id, ref] : refs) {
      auto it = o.observed.find(id);
      if (it == o.observed.end()) continue;
      const int rows = count_differences(it->second, ref) + (it->second.tokens != ref.tokens ? 1 : 0);
      if (rows == 0) continue;
      if (!differs && report.first_differing.empty())
        report.first_differing = absl::StrCat(c.name, ": target ", id, ", ", rows, " steps differ");
      differs = true;
    }
    report.cases_differing += differs;
    if (differs && options.stop_at_first_difference) break;
  }
  return report;
}

}  // namespace samebits::testing
