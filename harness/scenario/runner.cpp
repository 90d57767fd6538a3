#include "harness/scenario/runner.h"

#include <chrono>
#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "harness/golden/digest.h"

namespace samebits {
namespace runner_detail {

// An engine that runs this many steps in a row without computing a token is stuck: fail instead
// of spinning forever.
constexpr int64_t kMaxStalledSteps = 10000;

absl::StatusOr<std::unique_ptr<Session>> open_session(const ModelSource& source, const Backend& backend,
                                                      const EngineConfig& config,
                                                      const std::vector<Arrival>& arrivals, int samples) {
  auto session = std::make_unique<Session>();
  if (absl::Status s = validate_engine_config(config, source.config); !s.ok()) return s;
  const ModelConfig& mc = source.config;
  const double kv_bytes = 2.0 * 4 * mc.num_layers * mc.num_kv_heads * mc.head_dim * double(config.block_size) * config.num_blocks;
  // Host memory is bounded here; a GPU's own allocator refuses what does not fit (an error naming the bytes).
  if (backend.id == "cpu" && kv_bytes > double(kMaxKvCacheBytes))
    return absl::InvalidArgumentError(absl::StrCat("engine.kv_blocks: ", config.num_blocks, " blocks of ", config.block_size,
                                                   " tokens need ", int64_t(kv_bytes / (1 << 20)), " MiB of KV cache, over the limit of ",
                                                   kMaxKvCacheBytes >> 20, " MiB"));
  for (const Arrival& a : arrivals) {
    if (a.sample >= samples) return absl::InvalidArgumentError(absl::StrCat("sample index ", a.sample, " out of range"));
    if (!session->arrival_of_id.emplace(a.spec.id, &a).second)
      return absl::InvalidArgumentError(absl::StrCat("request id ", a.spec.id, " is used twice"));
  }
  auto model = build_model(source, backend, {config.num_blocks, config.block_size});
  if (!model.ok()) return model.status();
  session->model = std::move(*model);
  session->setup = session->model->setup_times();
  auto engine = Engine::create(*session->model, config);
  if (!engine.ok()) return engine.status();
  session->engine = std::move(*engine);

  session->targets.resize(size_t(samples));
  for (int i = 0; i < samples; ++i) session->targets[size_t(i)].sample = i;

  Session* s = session.get();
  session->engine->set_observer([s](uint64_t id, int token_index, int32_t token, std::span<const float> logits) {
    const int sample = s->sample_of(id);
    if (sample < 0) {
      if (s->observer_error.empty()) s->observer_error = absl::StrCat("observer called for request ", id, ", not a target");
      return;
    }
    TargetObservation& t = s->targets[size_t(sample)];
    if (token_index != int(t.tokens.size())) {
      if (s->observer_error.empty())
        s->observer_error = absl::StrCat("sample ", sample, ": observer got token index ", token_index, ", expected ",
                                         t.tokens.size());
      return;
    }
    const uint64_t d = step_digest(token, logits);
    t.tokens.push_back(token);
    t.steps.push_back(d);
    t.digest = chain_digest(t.digest, d);
  });
  return session;
}

absl::Status collect_finished(Session& session) {
  for (RequestResult& r : session.engine->take_finished()) {
    const int sample = session.sample_of(r.id);
    // A request the engine rejects never vanishes: the run fails naming it (check_fits turns the
    // foreseeable cases into input errors before the run).
    if (r.reason == FinishReason::kRejected)
      return absl::InvalidArgumentError(absl::StrCat(sample < 0 ? absl::StrCat("background request ", r.id)
                                                                : absl::StrCat("sample ", sample),
                                                     " was rejected by the engine: ", r.reject_reason));
    if (sample < 0) continue;
    TargetObservation& t = session.targets[size_t(sample)];
    if (r.tokens != t.tokens)
      return absl::InternalError(absl::StrCat("sample ", sample, ": the engine returned ", r.tokens.size(),
                                              " tokens that differ from the ", t.tokens.size(), " it reported"));
    t.finish = finish_reason_name(r.reason);
    t.prefix_hit_tokens = r.prefix_hit_tokens;
    t.preemptions = r.preemptions;
    ++session.targets_done;
  }
  return absl::OkStatus();
}

absl::Status run_step(Session& session, const StepRecord* forced, ModeRun* out, bool keep_records) {
  auto record = session.engine->step(forced);
  if (!record.ok()) return record.status();
  if (!session.observer_error.empty()) return absl::InternalError(session.observer_error);
  session.schedule_digest = chain_digest(session.schedule_digest, schedule_step_digest(*record));
  session.stalled_steps = record->entries.empty() ? session.stalled_steps + 1 : 0;
  if (session.stalled_steps > kMaxStalledSteps)
    return absl::InternalError(absl::StrCat("the engine computed nothing for ", kMaxStalledSteps, " steps in a row"));
  if (keep_records) out->records.push_back(std::move(*record));
  return collect_finished(session);
}

absl::Status finish_run(Session& session, std::chrono::steady_clock::time_point start, ModeRun* out) {
  if (absl::Status s = collect_finished(session); !s.ok()) return s;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (session.targets_done != int(session.targets.size()))
    return absl::InternalError(absl::StrCat("only ", session.targets_done, " of ", session.targets.size(), " samples finished"));
  const int64_t baseline = out->figures.host_rss_baseline_bytes;
  out->figures = figures_of(*session.engine, wall);
  out->figures.host_rss_baseline_bytes = baseline;
  out->figures.schedule_digest = session.schedule_digest;
  out->figures.setup_weights_seconds = session.setup.weights_seconds;
  out->figures.setup_weights_bytes = int64_t(session.setup.weights_bytes);
  out->figures.setup_kv_cache_seconds = session.setup.kv_cache_seconds;
  const HostRss rss = host_rss_bytes();
  out->figures.host_peak_rss_bytes = rss.peak;
  out->targets = std::move(session.targets);
  return absl::OkStatus();
}

uint64_t schedule_step_digest(const StepRecord& record) {
  std::vector<uint64_t> words;
  for (const auto& e : record.entries) {
    words.insert(words.end(), {e.request_id, uint64_t(uint32_t(e.start_position)), uint64_t(uint32_t(e.num_tokens)),
                               uint64_t(e.samples)});
  }
  words.push_back(~uint64_t(0));
  words.insert(words.end(), record.preempted.begin(), record.preempted.end());
  words.push_back(~uint64_t(0));
  words.insert(words.end(), record.admitted.begin(), record.admitted.end());
  std::string bytes;
  for (uint64_t w : words)
    for (int i = 0; i < 8; ++i) bytes.push_back(char((w >> (8 * i)) & 0xff));
  return bytes_digest(bytes);
}

RunFigures figures_of(const Engine& engine, double wall_seconds) {
  const EngineStats& s = engine.stats();
  RunFigures f;
  f.wall_seconds = wall_seconds;
  f.engine_steps = s.steps;
  f.tokens_generated = s.tokens_generated;
  f.tokens_computed = s.tokens_computed;
  f.prefix_hit_tokens = s.prefix_hit_tokens;
  f.prefix_hit_requests = s.prefix_hit_requests;
  f.preemptions = s.preemptions;
  f.step_seconds = s.step_seconds;
  f.host_wait_seconds = s.host_wait_seconds;
  f.host_waits = s.host_waits;
  f.host_idle_device_seconds = s.host_idle_device_seconds;
  f.overlapped_steps = s.overlapped_steps;
  f.scheduled_ahead_steps = s.scheduled_ahead_steps;
  f.discarded_rows = s.discarded_rows;
  f.host_schedule_seconds = s.schedule_seconds;
  f.host_issue_seconds = s.issue_seconds;
  f.host_book_seconds = s.book_seconds;
  f.graph_replays = s.graph_replays;
  f.graph_captures = s.graph_captures;
  for (const auto& [kind, t] : s.op_times) f.op_times.push_back({kind, t.calls, t.seconds, t.host_seconds});
  return f;
}

absl::StatusOr<std::unique_ptr<Session>> open_run_session(const RunSetup& setup, const Workload& workload,
                                                          Mode mode) {
  if (absl::Status s = check_fits(setup, workload); !s.ok()) return s;
  EngineConfig config = engine_config(*setup.scenario, setup.num_threads, mode);
  config.profile = setup.profile;
  config.graphs = setup.graphs;
  config.schedule_ahead = setup.schedule_ahead;
  return open_session(*setup.model, *setup.backend, config, workload.arrivals, workload.samples);
}

}  // namespace runner_detail

HostRss host_rss_bytes() {
  HostRss rss;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    int64_t* field = line.rfind("VmRSS:", 0) == 0 ? &rss.current : line.rfind("VmHWM:", 0) == 0 ? &rss.peak : nullptr;
    if (field == nullptr) continue;
    *field = std::atoll(line.c_str() + 6) * 1024;  // "VmRSS:   1234 kB"
  }
  return rss;
}

absl::Status check_fits(const RunSetup& setup, const Workload& workload) {
  const Scenario& sc = *setup.scenario;
  const ModelConfig& mc = setup.model->config;
  const int target_len = int(workload.target_prompt.size()) + sc.max_new_tokens;
  if (mc.max_position_embeddings > 0 && target_len > mc.max_position_embeddings) {
    return absl::InvalidArgumentError(absl::StrCat(
        sc.file, ": max_new_tokens: ", sc.max_new_tokens, " plus the prompt's ", workload.target_prompt.size(),
        " tokens exceeds the model's context of ", mc.max_position_embeddings));
  }
  const int64_t blocks = (target_len + sc.engine.block_size - 1) / sc.engine.block_size;
  if (blocks > sc.engine.kv_blocks) {
    return absl::InvalidArgumentError(absl::StrCat(sc.file, ": engine.kv_blocks: ", sc.engine.kv_blocks,
                                                   " cannot hold one sample (", blocks, " blocks needed)"));
  }
  for (const Arrival& a : workload.arrivals) {
    for (int32_t t : a.spec.prompt) {
      if (t < 0 || t >= mc.vocab_size)
        return absl::InvalidArgumentError(absl::StrCat(sc.file, ": prompt: token ", t, " is outside the model's vocabulary of ",
                                                       mc.vocab_size));
    }
    const int len = int(a.spec.prompt.size()) + a.spec.max_new_tokens;
    if (a.sample < 0 && mc.max_position_embeddings > 0 && len > mc.max_position_embeddings) {
      return absl::InvalidArgumentError(absl::StrCat(sc.file, ": mix.prompt_len/output_len: a background request of ", len,
                                                     " tokens exceeds the model's context of ", mc.max_position_embeddings));
    }
    const int64_t request_blocks = (len - 1 + sc.engine.block_size - 1) / sc.engine.block_size;  // as the engine counts
    if (a.sample < 0 && request_blocks > sc.engine.kv_blocks) {
      return absl::InvalidArgumentError(absl::StrCat(sc.file, ": engine.kv_blocks: ", sc.engine.kv_blocks,
                                                     " cannot hold a background request of ", len, " tokens (",
                                                     request_blocks, " blocks; see mix.prompt_len/output_len)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ModeRun> run_simulated(const RunSetup& setup, const Workload& workload, Mode mode) {
  using namespace runner_detail;
  auto session_or = open_run_session(setup, workload, mode);
  if (!session_or.ok()) return session_or.status();
  Session& session = **session_or;
  Engine& engine = *session.engine;

  ModeRun out;
  out.mode = mode;
  out.figures.host_rss_baseline_bytes = setup.rss_baseline_bytes;
  const auto start = std::chrono::steady_clock::now();
  const auto& arrivals = workload.arrivals;
  size_t next = 0;
  int64_t sim_step = 0, engine_steps = 0;
  int reported = -1;
  while (next < arrivals.size() || engine.has_unfinished()) {
    // An idle engine skips ahead to the next arrival: simulated time, not wall time.
    if (!engine.has_unfinished() && arrivals[next].step > sim_step) sim_step = arrivals[next].step;
    while (next < arrivals.size() && arrivals[next].step <= sim_step) {
      engine.add_request(arrivals[next].spec);
      out.submitted.push_back({engine_steps, arrivals[next].spec.id});
      ++next;
    }
    if (engine.has_unfinished()) {
      if (absl::Status s = run_step(session, nullptr, &out, setup.keep_records); !s.ok()) return s;
      ++engine_steps;
    } else if (absl::Status s = collect_finished(session); !s.ok()) {
      return s;
    }
    ++sim_step;
    if (setup.progress && session.targets_done != reported) {
      reported = session.targets_done;
      setup.progress(reported, workload.samples);
    }
  }
  if (absl::Status s = finish_run(session, start, &out); !s.ok()) return s;
  return out;
}

}  // namespace samebits
