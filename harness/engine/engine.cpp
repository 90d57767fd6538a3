// The engine: the scheduler decides each step, the model computes it, the backend samples, the
// scheduler books the result. Buffers of a step are members, reused (two sets: see below).
// Overlap: a step is enqueued whole (Model::forward_sample_begin) before the host does the work
// that does not depend on its sampled tokens (the step's record, the prefix cache's registration
// of the blocks it fills); then one wait, then the tokens are booked.
// Scheduling ahead (EngineConfig::schedule_ahead): a step's tokens are booked in the NEXT call,
// after that call has scheduled and enqueued the next step, its decode rows fed with the tokens on
// the device (ForwardBatch::fed_tokens). While the device computes step n the host schedules step
// n + 1, builds its batch and issues it; the host waits only for step n's mark. What is unknown
// then is which requests step n finishes by a sampled value (EOS, a stop sequence):
// - invariant mode: such a request is scheduled anyway; if it did finish, its row of step n + 1
//   is discarded (left out of the record, the booking and the prefix cache; its KV writes land in
//   its own blocks, freed when it finishes). No row's bits depend on the other rows, the chunking
//   or the blocks, so every token and logit is the same; only the schedule may differ.
// - default mode: a batch's composition changes every row's bits, so a speculative row would
//   change the run. Step n is left in flight only when no row of it can finish by a sampled value
//   (Scheduler::outlook exact): then the next schedule is the one it would be once the tokens are
//   known (it depends on counts, never on token values), step for step. Otherwise step n is
//   booked in its own call, as without scheduling ahead.
// Either mode books a step in its own call when no request certainly remains after it, so no call
// ends up with nothing to compute.
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

// One step's buffers: its batch, its sampling rows (untouched until its finish), and per
// sampling row its request (nullptr: a discarded row) and the rows the observer sees.
struct StepBuffers {
  ScheduleOutput out;
  ForwardBatch batch;
  std::vector<SamplingRow> rows;
  std::vector<Request*> sampling;
  std::vector<int32_t> observed_rows;
};

struct Engine::Impl {
  ~Impl() {
    // A step left in flight is waited for (not booked), so that the model has none pending for
    // the next engine on it.
    if (in_flight) (void)model->forward_sample_finish(config.exec, &sampled, &logits);
  }
  Model* model = nullptr;
  EngineConfig config;
  std::unique_ptr<Scheduler> scheduler;
  StepObserver observer;
  EngineStats stats;
  // Two sets of step buffers: steps[current] is the step being built, steps[1 - current] the one
  // in flight when in_flight (begun, its tokens not booked yet).
  StepBuffers steps[2];
  int current = 0;
  bool in_flight = false;
  absl::Status deferred;  // an error of a booking outside step() (cancel), reported by the next step()
  std::vector<float> logits;
  std::vector<int32_t> sampled;
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
  bool schedules_ahead() const { return config.overlap && config.schedule_ahead && !config.profile; }
  void build_batch(StepBuffers& step, const StepBuffers* previous);
  // Waits for `step`, hands its tokens to the observer and the scheduler; rows of `next` (the step
  // issued after it, or nullptr) whose request finished are discarded.
  absl::Status book(StepBuffers& step, StepBuffers* next = nullptr);
  absl::Status drain() {
    if (!in_flight) return absl::OkStatus();
    in_flight = false;
    return book(steps[1 - current]);
  }
  absl::StatusOr<StepRecord> run_step(const StepRecord* forced);
};

// `previous`: the step in flight, whose sampled tokens the requests with a pending token get fed.
void Engine::Impl::build_batch(StepBuffers& step, const StepBuffers* previous) {
  ForwardBatch& b = step.batch;
  const int bs = config.block_size;
  b.tokens.clear(), b.positions.clear(), b.slot_mapping.clear(), b.query_start.clear();
  b.context_lens.clear(), b.block_tables.clear(), b.logit_rows.clear(), b.fed_tokens.clear(), b.fed_from.clear();
  step.rows.clear(), step.sampling.clear(), step.observed_rows.clear();
  int max_blocks = 1;
  for (const ScheduledEntry& e : step.out.entries) max_blocks = std::max(max_blocks, int(e.request->blocks.size()));
  b.max_blocks_per_seq = max_blocks;
  b.query_start.push_back(0);
  for (const ScheduledEntry& e : step.out.entries) {
    const Request& r = *e.request;
    for (int p = e.start; p < e.start + e.num_tokens; ++p) {
      if (r.token_pending && p == r.num_tokens() - 1 && previous != nullptr) {
        b.fed_tokens.push_back(int32_t(b.tokens.size()));
        b.fed_from.push_back(r.pending_row);
        b.tokens.push_back(0);  // any valid id: the feed overwrites it on the device
      } else {
        b.tokens.push_back(r.tokens[size_t(p)]);
      }
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
      if (r.spec.observe && observer) step.observed_rows.push_back(int32_t(step.rows.size()));
      step.rows.push_back(row);
      step.sampling.push_back(e.request);
    }
  }
}

absl::Status Engine::Impl::book(StepBuffers& step, StepBuffers* next) {
  if (absl::Status s = model->forward_sample_finish(config.exec, &sampled, &logits); !s.ok()) return s;
  // Without a next step issued, the device has nothing to do while the host books this one.
  const auto arrived = std::chrono::steady_clock::now();
  struct BookTime {
    EngineStats* stats;
    bool device_idle;
    std::chrono::steady_clock::time_point since;
    ~BookTime() {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
      stats->book_seconds += s;
      if (device_idle) stats->host_idle_device_seconds += s;
    }
  } book_time{&stats, next == nullptr, arrived};
  if (timer) {
    if (absl::Status s = timer->collect(&stats.op_times); !s.ok()) return s;
  }
  Scheduler& sched = *scheduler;
  const size_t V = size_t(model->config().vocab_size);
  size_t observed = 0;
  for (size_t k = 0; k < step.sampling.size(); ++k) {
    Request* r = step.sampling[k];
    const bool seen = observed < step.observed_rows.size() && step.observed_rows[observed] == int32_t(k);
    if (seen) ++observed;
    if (r == nullptr) continue;  // discarded: its request had finished before this step
    if (seen) observer(r->spec.id, r->num_generated() - int(r->token_pending), sampled[k],
                       std::span<const float>(&logits[(observed - 1) * V], V));
    ++stats.tokens_generated;
    if (!r->token_pending) {
      sched.append_token(r, sampled[k]);  // may finish and free r
      continue;
    }
    // A request that finishes here loses its row of the next step before it is freed.
    if (next != nullptr && sched.finish_reason_after(*r, sampled[k]) != FinishReason::kRunning) {
      auto& entries = next->out.entries;
      const auto before = entries.size();
      entries.erase(std::remove_if(entries.begin(), entries.end(), [r](const ScheduledEntry& e) { return e.request == r; }),
                    entries.end());
      stats.discarded_rows += int64_t(before - entries.size());
      std::replace(next->sampling.begin(), next->sampling.end(), r, static_cast<Request*>(nullptr));
    }
    sched.resolve_token(r, sampled[k]);  // may finish and free r
  }
  return absl::OkStatus();
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

bool Engine::has_unfinished() const { return impl_->in_flight || impl_->scheduler->has_unfinished(); }

bool Engine::cancel(uint64_t request_id) {
  // The request's last token may still be in flight: book it first.
  if (absl::Status s = impl_->drain(); !s.ok() && impl_->deferred.ok()) impl_->deferred = s;
  return impl_->scheduler->cancel(request_id);
}

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
  if (!m.deferred.ok()) return std::exchange(m.deferred, absl::OkStatus());
  // A replayed step needs every token known (the record was made by a step that knew them).
  if (forced != nullptr) {
    if (absl::Status s = m.drain(); !s.ok()) return s;
  }
  StepBuffers& step = m.steps[m.current];
  StepBuffers* previous = m.in_flight ? &m.steps[1 - m.current] : nullptr;
  if (forced != nullptr) {
    absl::StatusOr<ScheduleOutput> replayed = sched.schedule_forced(*forced);
    if (!replayed.ok()) return replayed.status();
    step.out = *std::move(replayed);
  } else {
    step.out = sched.schedule();
  }
  const ScheduleOutput& out = step.out;
  ++m.stats.steps;
  m.sync_stats();
  if (out.entries.empty()) {
    // The step in flight is booked: the caller sees its results before an empty step.
    const bool was_in_flight = m.in_flight;
    if (absl::Status s = m.drain(); !s.ok()) return s;
    StepRecord record = sched.record_of(out);
    // Only a step that preempted everyone may be empty; anything else would repeat forever.
    if (sched.has_unfinished() && out.preempted.empty() && forced == nullptr && !was_in_flight) {
      return absl::InternalError(absl::StrCat("engine: step ", out.step, " scheduled nothing with ", sched.num_waiting(),
                                              " waiting and ", sched.num_running(), " running requests"));
    }
    return record;
  }
  m.build_batch(step, previous);
  std::optional<StepRecord> record;
  if (!m.config.overlap) {
    record = sched.record_of(out);
    sched.commit(out);
  }
  const auto issue_start = std::chrono::steady_clock::now();
  const double scheduling = std::chrono::duration<double>(issue_start - m.step_start).count();
  m.stats.schedule_seconds += scheduling;
  // With no step in flight the device has nothing to do until this step's first op.
  if (previous == nullptr) {
    m.stats.host_idle_device_seconds += scheduling;
  } else {
    ++m.stats.scheduled_ahead_steps;
  }
  if (absl::Status s = m.model->forward_sample_begin(m.config.exec, step.batch, step.rows, step.observed_rows); !s.ok()) {
    return s;
  }
  m.stats.issue_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - issue_start).count();
  m.stats.tokens_computed += out.num_tokens;
  if (previous != nullptr) {
    m.in_flight = false;
    if (absl::Status s = m.book(*previous, &step); !s.ok()) return s;
  }
  const Backend& backend = m.model->backend();
  if (m.config.overlap) {
    record = sched.record_of(out);  // without the rows discarded by the booking above
    sched.commit(out);  // the step's input tokens are known: its full blocks can be registered
    if (backend.busy != nullptr && backend.busy(m.config.exec)) ++m.stats.overlapped_steps;
  }
  const Scheduler::Outlook ahead = sched.outlook(out);
  if (m.schedules_ahead() && ahead.work_remains && (m.config.exec.mode == Mode::kInvariant || ahead.exact)) {
    for (size_t k = 0; k < step.sampling.size(); ++k) {
      if (step.sampling[k] != nullptr) sched.expect_token(step.sampling[k], int32_t(k));
    }
    m.in_flight = true;
    m.current = 1 - m.current;
    return *std::move(record);
  }
  if (absl::Status s = m.book(step); !s.ok()) return s;
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
