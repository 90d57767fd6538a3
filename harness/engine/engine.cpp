// The engine: the scheduler decides each step, the model computes it, the backend samples, the
// scheduler books the result. Buffers of the step are members, reused from step to step.
// Overlap: a step is enqueued whole (Model::forward_sample_begin) before the host does the work
// that does not depend on the sampled tokens (the step's record, the prefix cache's registration
// of the blocks the step fills); then one wait, then the tokens are booked. The next step's
// schedule depends on them (a request that samples EOS finishes and frees its blocks), so it
// waits for them: the step's schedule and bits do not depend on the overlap.
#include "harness/engine/engine.h"

#include <chrono>
#include <optional>

#include "absl/strings/str_cat.h"
#include "harness/engine/scheduler.h"
#include "kernels/fixed_math.h"

namespace samebits {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kRunning: return "running";
    case FinishReason::kMaxTokens: return "max_tokens";
    case FinishReason::kEos: return "eos";
    case FinishReason::kStopSequence: return "stop_sequence";
    case FinishReason::kRejected: return "rejected";
    case FinishReason::kCancelled: return "cancelled";
  }
  return "unknown";
}

absl::Status validate_engine_config(const EngineConfig& c, const ModelConfig& model) {
  auto positive = [](const char* field, int64_t v) -> absl::Status {
    if (v > 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("engine.", field, ": ", v, " is not a positive integer"));
  };
  if (absl::Status s = validate_config(model); !s.ok()) return s;
  if (absl::Status s = positive("block_size", c.block_size); !s.ok()) return s;
  if (kInvariantAttentionSplit % c.block_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("engine.block_size: ", c.block_size,
                                                   " does not divide the attention split size ", kInvariantAttentionSplit));
  }
  if (absl::Status s = positive("num_blocks", c.num_blocks); !s.ok()) return s;
  if (c.max_tokens_per_step < 1) {
    return absl::InvalidArgumentError(absl::StrCat("engine.max_tokens_per_step: ", c.max_tokens_per_step,
                                                   " is a budget smaller than one token"));
  }
  if (absl::Status s = positive("max_seqs", c.max_seqs); !s.ok()) return s;
  if (c.max_chunk < 0) {
    return absl::InvalidArgumentError(absl::StrCat("engine.max_chunk: ", c.max_chunk, " is negative (0 = no cap)"));
  }
  if (c.exec.num_threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat("engine.exec.num_threads: ", c.exec.num_threads, " is negative (0 = default)"));
  }
  if (absl::Status s = positive("exec.parallel_units", c.exec.parallel_units); !s.ok()) return s;
  return absl::OkStatus();
}

struct Engine::Impl {
  Model* model = nullptr;
  EngineConfig config;
  std::unique_ptr<Scheduler> scheduler;
  StepObserver observer;
  EngineStats stats;
  // Per-step buffers, reused.
  ForwardBatch batch;
  std::vector<float> logits;
  std::vector<SamplingRow> rows;
  std::vector<int32_t> sampled;
  std::vector<Request*> sampling;
  std::vector<int32_t> observed_rows;  // sampling rows whose logits the observer sees
  std::unique_ptr<OpTimer> timer;      // with config.profile
  Model::GraphStats graphs_before;     // the model's graph counts when the engine started
  std::chrono::steady_clock::time_point step_start;

  void sync_stats() {
    const SchedulerStats& s = scheduler->stats();
    stats.prefix_hit_tokens = s.prefix_hit_tokens;
    stats.prefix_hit_requests = s.prefix_hit_requests;
    stats.preemptions = s.preemptions;
    stats.rejected = s.rejected;
  }
  void build_batch(const ScheduleOutput& out);
  absl::StatusOr<StepRecord> run_step(const StepRecord* forced);
};

void Engine::Impl::build_batch(const ScheduleOutput& out) {
  ForwardBatch& b = batch;
  const int bs = config.block_size;
  b.tokens.clear(), b.positions.clear(), b.slot_mapping.clear(), b.query_start.clear();
  b.context_lens.clear(), b.block_tables.clear(), b.logit_rows.clear();
  rows.clear(), sampling.clear(), observed_rows.clear();
  int max_blocks = 1;
  for (const ScheduledEntry& e : out.entries) max_blocks = std::max(max_blocks, int(e.request->blocks.size()));
  b.max_blocks_per_seq = max_blocks;
  b.query_start.push_back(0);
  for (const ScheduledEntry& e : out.entries) {
    const Request& r = *e.request;
    for (int p = e.start; p < e.start + e.num_tokens; ++p) {
      b.tokens.push_back(r.tokens[size_t(p)]);
      b.positions.push_back(p);
      b.slot_mapping.push_back(int64_t(r.blocks[size_t(p / bs)]) * bs + p % bs);
    }
    b.query_start.push_back(int32_t(b.tokens.size()));
    b.context_lens.push_back(e.start + e.num_tokens);
    b.block_tables.insert(b.block_tables.end(), r.blocks.begin(), r.blocks.end());
    b.block_tables.resize(b.block_tables.size() + size_t(max_blocks) - r.blocks.size(), 0);
    if (e.samples) {
      b.logit_rows.push_back(int32_t(b.tokens.size()) - 1);
      const SamplingParams& sp = r.spec.sampling;
      SamplingRow row;
      row.temperature = sp.temperature;
      row.top_k = sp.top_k;
      row.top_p = sp.top_p;
      // Keyed by (seed, index of the token to generate): never by batch row, step or preemption.
      row.uniform = sampling_uniform(sp.seed, uint64_t(r.num_generated()));
      if (r.spec.observe && observer) observed_rows.push_back(int32_t(rows.size()));
      rows.push_back(row);
      sampling.push_back(e.request);
    }
  }
}

Engine::Engine() : impl_(std::make_unique<Impl>()) {}
Engine::~Engine() = default;

absl::StatusOr<std::unique_ptr<Engine>> Engine::create(Model& model, const EngineConfig& config) {
  if (absl::Status s = validate_engine_config(config, model.config()); !s.ok()) return s;
  const KvCacheShape kv = model.kv_shape();
  if (kv.block_size != config.block_size) {
    return absl::InvalidArgumentError(absl::StrCat("engine.block_size: ", config.block_size,
                                                   " differs from the model's KV block size ", kv.block_size));
  }
  if (config.num_blocks > kv.num_blocks) {
    return absl::InvalidArgumentError(absl::StrCat("engine.num_blocks: ", config.num_blocks,
                                                   " exceeds the model's KV cache of ", kv.num_blocks, " blocks"));
  }
  std::unique_ptr<Engine> engine(new Engine());
  Impl& m = *engine->impl_;
  m.model = &model;
  m.config = config;
  SchedulerConfig sc;
  sc.block_size = config.block_size;
  sc.num_blocks = config.num_blocks;
  sc.max_tokens_per_step = config.max_tokens_per_step;
  sc.max_seqs = config.max_seqs;
  sc.max_chunk = config.max_chunk;
  sc.prefix_cache = config.prefix_cache;
  sc.max_model_len = model.config().max_position_embeddings;
  sc.vocab_size = model.config().vocab_size;
  sc.eos_token_id = model.config().eos_token_id;
  m.scheduler = std::make_unique<Scheduler>(sc);
  model.set_graphs(config.graphs);
  m.graphs_before = model.graph_stats();
  if (config.profile) {
    m.timer = make_op_timer(model.backend(), config.exec);
    m.config.exec.timer = m.timer.get();
  }
  return engine;
}

void Engine::add_request(RequestSpec spec) {
  impl_->scheduler->add(std::move(spec));
  impl_->sync_stats();
}

bool Engine::has_unfinished() const { return impl_->scheduler->has_unfinished(); }
bool Engine::cancel(uint64_t request_id) { return impl_->scheduler->cancel(request_id); }

absl::StatusOr<StepRecord> Engine::step(const StepRecord* forced) {
  Impl& m = *impl_;
  const auto start = std::chrono::steady_clock::now();
  m.step_start = start;
  const SyncStats waits_before = sync_stats(m.model->backend());
  absl::StatusOr<StepRecord> record = m.run_step(forced);
  const SyncStats waits_after = sync_stats(m.model->backend());
  m.stats.step_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.stats.host_waits += waits_after.syncs - waits_before.syncs;
  m.stats.host_wait_seconds += waits_after.wait_seconds - waits_before.wait_seconds;
  const Model::GraphStats graphs = m.model->graph_stats();
  m.stats.graph_replays = graphs.replays - m.graphs_before.replays;
  m.stats.graph_captures = graphs.captures - m.graphs_before.captures;
  return record;
}

absl::StatusOr<StepRecord> Engine::Impl::run_step(const StepRecord* forced) {
  Impl& m = *this;
  Scheduler& sched = *m.scheduler;
  ScheduleOutput out;
  if (forced != nullptr) {
    absl::StatusOr<ScheduleOutput> replayed = sched.schedule_forced(*forced);
    if (!replayed.ok()) return replayed.status();
    out = *std::move(replayed);
  } else {
    out = sched.schedule();
  }
  ++m.stats.steps;
  m.sync_stats();
  if (out.entries.empty()) {
    StepRecord record = sched.record_of(out);
    // Only a step that preempted everyone may be empty; anything else would repeat forever.
    if (sched.has_unfinished() && out.preempted.empty() && forced == nullptr) {
      return absl::InternalError(absl::StrCat("engine: step ", out.step, " scheduled nothing with ", sched.num_waiting(),
                                              " waiting and ", sched.num_running(), " running requests"));
    }
    return record;
  }
  m.build_batch(out);
  const Backend& backend = m.model->backend();
  std::optional<StepRecord> record;
  if (!m.config.overlap) {
    record = sched.record_of(out);
    sched.commit(out);
  }
  // The device starts on the step's first op while the host still issues the others.
  m.stats.host_idle_device_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - m.step_start).count();
  if (absl::Status s = m.model->forward_sample_begin(m.config.exec, m.batch, m.rows, m.observed_rows); !s.ok()) {
    return s;
  }
  if (m.config.overlap) {
    record = sched.record_of(out);
    sched.commit(out);  // the step's input tokens are known: its full blocks can be registered
    if (backend.busy != nullptr && backend.busy(m.config.exec)) ++m.stats.overlapped_steps;
  }
  if (absl::Status s = m.model->forward_sample_finish(m.config.exec, &m.sampled, &m.logits); !s.ok()) return s;
  const auto arrived = std::chrono::steady_clock::now();
  if (m.timer) {
    if (absl::Status s = m.timer->collect(&m.stats.op_times); !s.ok()) return s;
  }
  const size_t V = size_t(m.model->config().vocab_size);
  size_t observed = 0;
  for (size_t k = 0; k < m.sampling.size(); ++k) {
    Request* r = m.sampling[k];
    if (observed < m.observed_rows.size() && m.observed_rows[observed] == int32_t(k)) {
      m.observer(r->spec.id, r->num_generated(), m.sampled[k], std::span<const float>(&m.logits[observed * V], V));
      ++observed;
    }
    sched.append_token(r, m.sampled[k]);  // may finish and free r
  }
  m.stats.tokens_computed += out.num_tokens;
  m.stats.tokens_generated += int64_t(m.sampling.size());
  m.stats.host_idle_device_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - arrived).count();
  return *std::move(record);
}

std::vector<RequestResult> Engine::take_finished() { return impl_->scheduler->take_finished(); }
void Engine::set_observer(StepObserver observer) { impl_->observer = std::move(observer); }
const EngineStats& Engine::stats() const { return impl_->stats; }
std::string Engine::check_invariants() const { return impl_->scheduler->check_invariants(); }
int Engine::free_blocks() const { return impl_->scheduler->block_manager().num_free(); }
int Engine::num_waiting() const { return impl_->scheduler->num_waiting(); }
int Engine::num_running() const { return impl_->scheduler->num_running(); }

}  // namespace samebits
