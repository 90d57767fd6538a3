// compare, replay, info.
#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "harness/cli/commands.h"
#include "harness/golden/digest.h"
#include "harness/report/report.h"
#include "harness/scenario/live.h"

namespace samebits::cli {

int compare_command(const std::string& a_path, const std::string& b_path) {
  auto a = read_results_file(a_path);
  if (!a.ok()) return input_error(std::string(a.status().message()));
  auto b = read_results_file(b_path);
  if (!b.ok()) return input_error(std::string(b.status().message()));
  bool same = true;
  std::printf("A: %s (%s, %s)\nB: %s (%s, %s)\n", a_path.c_str(), a->identity.backend.id.c_str(), a->identity.scenario.name.c_str(),
              b_path.c_str(), b->identity.backend.id.c_str(), b->identity.scenario.name.c_str());
  std::printf("%-22s %8s %13s %13s %13s %9s %12s %10s %10s %s\n", "mode", "samples", "completions", "logit streams",
              "1st tok div", "differing", "first sample", "token step", "logit step", "main completions");
  auto pair = [](int x, int y) { return absl::StrCat(x, " | ", y); };
  auto pos = [](int p) { return p < 0 ? std::string("-") : std::to_string(p); };
  for (const ComparisonLine& l : compare_results(*a, *b)) {
    std::printf("%-22s %8d %13s %13s %13s %9d %12s %10s %10s %s%s%s\n", l.mode.c_str(), l.samples_compared,
                pair(l.unique_completions_a, l.unique_completions_b).c_str(),
                pair(l.unique_streams_a, l.unique_streams_b).c_str(),
                absl::StrCat(pos(l.first_token_divergence_a), " | ", pos(l.first_token_divergence_b)).c_str(),
                l.samples_differing, pos(l.first_sample).c_str(), pos(l.first_token_step).c_str(),
                pos(l.first_logit_step).c_str(), l.main_completions_agree ? "agree" : "DIFFER",
                l.note.empty() ? "" : "  ", l.note.c_str());
    same = same && l.samples_differing == 0 && l.note.empty() && l.main_completions_agree;
  }
  for (Mode mode : {Mode::kInvariant, Mode::kDefault}) {
    if (std::string why = incomparability(a->identity, b->identity, mode); !why.empty())
      std::printf("note: %s mode is not comparable between the files: %s\n", std::string(mode_name(mode)).c_str(),
                  why.c_str());
  }
  return same ? kExitPass : kExitDiverged;
}

int replay_command(const std::string& trace_path, const std::string& json) {
  auto trace = read_trace(trace_path);
  if (!trace.ok()) return input_error(std::string(trace.status().message()));
  std::string why;
  const RunIdentity& recorded_id = trace->identity;
  const Backend* backend = find_backend(recorded_id.backend.name, &why);
  if (!backend) return input_error(absl::StrCat(trace_path, ": backend ", recorded_id.backend.name, ": ", why));
  if (backend->id != recorded_id.backend.id)
    return input_error(absl::StrCat(trace_path, ": recorded on backend ", recorded_id.backend.id, ", this one is ", backend->id));
  if (recorded_id.backend.kernel_set_version != kKernelSetVersion)
    return input_error(absl::StrCat(trace_path, ": recorded with kernel set version ", recorded_id.backend.kernel_set_version,
                                    ", this build has ", kKernelSetVersion));
  auto model = resolve_model(recorded_id.model.spec);
  if (!model.ok()) return input_error(std::string(model.status().message()));

  std::vector<ModeRun> runs;
  int differing_total = 0;
  for (const TraceRun& recorded : trace->runs) {
    auto run = replay_run(*trace, recorded, *model, *backend);
    if (!run.ok()) return input_error(absl::StrCat(trace_path, ": ", std::string(mode_name(recorded.mode)), " mode: ", run.status().message()));
    int differing = 0, first = -1;
    for (size_t i = 0; i < run->targets.size(); ++i) {
      if (run->targets[i].digest == recorded.digests[i]) continue;
      if (differing++ == 0) first = int(i);
    }
    std::printf("replay %s: %zu engine steps, %d of %zu sample digests differ from the trace%s\n",
                std::string(mode_name(recorded.mode)).c_str(), recorded.records.size(), differing,
                run->targets.size(), first < 0 ? "" : absl::StrCat(" (first: sample ", first, ")").c_str());
    differing_total += differing;
    runs.push_back(std::move(*run));
  }
  // The recorded identity, with the device this replay ran on.
  RunIdentity identity = recorded_id;
  identity.backend.description = backend->description;
  identity.backend.device = backend->device;
  RunResults results = make_results(identity, *model->tokenizer, runs);
  std::cout << format_table(results);
  if (!json.empty())
    if (absl::Status s = write_results_file(results, json); !s.ok()) return input_error(std::string(s.message()));
  return differing_total == 0 ? kExitPass : kExitDiverged;
}

int info_command() {
  std::printf("samebits %s, kernel set version %d\n", "0.1.0", kKernelSetVersion);
  std::printf("backends:\n  cpu: %s (id %s)\n", cpu_backend().description.c_str(), cpu_backend().id.c_str());
  std::string why;
  if (const Backend* cuda = cuda_backend(&why)) {
    std::printf("  cuda: %s (id %s)\n", cuda->description.c_str(), cuda->id.c_str());
    const BackendDevice& d = cuda->device;
    std::printf("    device %s, %d SMs, CUDA runtime %s, cuBLASLt %s\n", d.name.c_str(), d.sm_count,
                d.cuda_runtime.c_str(), d.cublaslt.c_str());
  } else {
    std::printf("  cuda: unavailable: %s\n", why.c_str());
  }
  std::printf("model configs: %s\n", absl::StrJoin(builtin_config_names(), ", ").c_str());
  auto model = resolve_model(kBuiltinModelSpec);
  if (model.ok()) {
    const ModelConfig& c = model->config;
    std::printf("builtin model: %s\n  weights digest %s; vocab %d, hidden %d, layers %d, heads %d/%d, head_dim %d, ffn %d, context %d\n",
                model->description.c_str(), digest_hex(model->weights_digest).c_str(), c.vocab_size, c.hidden_size,
                c.num_layers, c.num_heads, c.num_kv_heads, c.head_dim, c.intermediate_size, c.max_position_embeddings);
    std::printf("  tokenizer: %s\n", model->tokenizer->description().c_str());
  } else {
    std::printf("builtin model: unavailable: %s\n", std::string(model.status().message()).c_str());
  }
  return kExitPass;
}

}  // namespace samebits::cli
