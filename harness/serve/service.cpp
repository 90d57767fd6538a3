#include "harness/serve/service.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "harness/golden/digest.h"
#include "kernels/fixed_math.h"

namespace samebits::serve {
namespace {

constexpr int kTopAlternatives = 20;

// log-softmax of the chosen token and the top alternatives, in double with the project's own
// exp/log, so the reported logprobs are the same on every machine.
void fill_logprobs(std::span<const float> logits, int32_t token, TokenOut* out) {
  double max = -INFINITY;
  for (float l : logits) max = std::max(max, double(l));
  double sum = 0;
  for (float l : logits) sum += fixed_exp(double(l) - max);
  const double log_z = max + fixed_log(sum);
  out->logprob = float(double(logits[size_t(token)]) - log_z);
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
  const size_t k = std::min(ids.size(), size_t(kTopAlternatives));
  std::partial_sort(ids.begin(), ids.begin() + long(k), ids.end(), [&](int32_t a, int32_t b) {
    return logits[size_t(a)] != logits[size_t(b)] ? logits[size_t(a)] > logits[size_t(b)] : a < b;
  });
  for (size_t i = 0; i < k; ++i) out->top.emplace_back(ids[i], float(double(logits[size_t(ids[i])]) - log_z));
}

}  // namespace

absl::StatusOr<std::unique_ptr<EngineService>> EngineService::start(const ModelSource& source, const Backend& backend,
                                                                   const EngineConfig& config, const ServiceLimits& limits) {
  if (absl::Status s = validate_engine_config(config, source.config); !s.ok()) return s;
  std::unique_ptr<EngineService> svc(new EngineService());
  auto model = build_model(source, backend, {config.num_blocks, config.block_size});
  if (!model.ok()) return model.status();
  svc->model_ = std::move(*model);
  auto engine = Engine::create(*svc->model_, config);
  if (!engine.ok()) return engine.status();
  svc->engine_ = std::move(*engine);
  svc->limits_ = limits;
  svc->vocab_ = source.config.vocab_size;
  EngineService* self = svc.get();
  svc->engine_->set_observer([self](uint64_t id, int, int32_t token, std::span<const float> logits) {
    self->on_token(id, token, logits);
  });
  svc->health_.kv_blocks_total = config.num_blocks;
  svc->publish_health();
  svc->thread_ = std::thread([self] { self->loop(); });
  return svc;
}

EngineService::~EngineService() { stop(); }

std::shared_ptr<Job> EngineService::submit(const GenerationRequest& request, ApiError* error) {
  auto job = std::make_shared<Job>();
  job->request = request;
  job->choices.resize(size_t(request.n));
  job->choices_left = request.n;
  job->created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  job->deadline = std::chrono::steady_clock::now() + limits_.request_timeout;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      *error = {503, "server_error", "the server is shutting down", "", "shutting_down"};
      return nullptr;
    }
    if (queued_sequences_ + request.n > limits_.max_queued_sequences) {
      *error = {429, "rate_limit_exceeded",
                absl::StrCat("the queue is full (", queued_sequences_, " sequences in flight, at most ",
                             limits_.max_queued_sequences, "); retry later"),
                "", "queue_full"};
      return nullptr;
    }
    queued_sequences_ += request.n;
    job->id = absl::StrCat(request.api == Api::kChat ? "chatcmpl-" : "cmpl-", next_job_++);
    pending_.push_back(job);
  }
  cv_.notify_all();
  return job;
}

void EngineService::cancel(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(job);
  }
  cv_.notify_all();
}

Health EngineService::health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return health_;
}

void EngineService::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EngineService::on_token(uint64_t id, int32_t token, std::span<const float> logits) {
  auto it = slots_.find(id);
  if (it == slots_.end()) return;
  Job& job = *it->second.job;
  TokenOut out;
  out.id = token;
  out.step_digest = step_digest(token, logits);
  fill_logprobs(logits, token, &out);
  {
    std::lock_guard<std::mutex> lock(job.mu);
    ChoiceState& c = job.choices[size_t(it->second.choice)];
    c.digest = chain_digest(c.digest, out.step_digest);
    c.tokens.push_back(std::move(out));
  }
  job.cv.notify_all();
}

void EngineService::on_finished(const RequestResult& r) {
  auto it = slots_.find(r.id);
  if (it == slots_.end()) return;
  std::shared_ptr<Job> job = it->second.job;
  const int choice = it->second.choice;
  slots_.erase(it);
  bool job_done = false;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    ChoiceState& c = job->choices[size_t(choice)];
    c.done = true;
    c.reason = r.reason;
    if (r.reason == FinishReason::kRejected && job->error.empty()) job->error = r.reject_reason;
    job_done = --job->choices_left == 0;
    if (job_done) job->done = true;
  }
  job->cv.notify_all();
  std::lock_guard<std::mutex> lock(mu_);
  --queued_sequences_;
  if (job_done) {
    active_.erase(std::find(active_.begin(), active_.end(), job));
    ++health_.jobs_finished;
    if (r.reason == FinishReason::kCancelled) ++health_.jobs_cancelled;
  }
}

void EngineService::expire_deadlines() {
  const auto now = std::chrono::steady_clock::now();
  for (const auto& job : active_) {
    if (job->deadline > now) continue;
    {
      std::lock_guard<std::mutex> lock(job->mu);
      if (job->timed_out) continue;
      job->timed_out = true;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++health_.jobs_timed_out;
    }
    for (uint64_t id : job->engine_ids) engine_->cancel(id);
  }
}

void EngineService::publish_health() {
  std::lock_guard<std::mutex> lock(mu_);
  health_.kv_blocks_free = engine_->free_blocks();
  health_.running = engine_->num_running();
  health_.waiting = engine_->num_waiting();
  health_.in_flight = int(active_.size());
  health_.engine_steps = engine_->stats().steps;
  health_.tokens_generated = engine_->stats().tokens_generated;
}

void EngineService::loop() {
  for (;;) {
    std::deque<std::shared_ptr<Job>> pending;
    std::vector<std::shared_ptr<Job>> cancels;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const bool busy = engine_->has_unfinished();
      if (!busy) {
        // Idle: sleep until work arrives, waking now and then to expire deadlines of queued jobs.
        cv_.wait_for(lock, std::chrono::milliseconds(200),
                     [&] { return !pending_.empty() || !cancels_.empty() || stopping_; });
      }
      pending.swap(pending_);
      cancels.swap(cancels_);
      if (stopping_ && pending.empty() && active_.empty() && !engine_->has_unfinished()) break;
    }
    for (auto& job : pending) {
      for (int c = 0; c < job->request.n; ++c) {
        job->engine_ids.push_back(next_engine_id_++);
        slots_[job->engine_ids.back()] = {job, c};
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        active_.push_back(job);
      }
      for (size_t c = 0; c < job->engine_ids.size(); ++c) {
        RequestSpec spec;
        spec.id = job->engine_ids[c];
        spec.prompt = job->request.prompt;
        spec.sampling = job->request.sampling;
        spec.sampling.seed = job->request.sampling.seed + uint64_t(c);
        spec.max_new_tokens = job->request.max_tokens;
        spec.stop_at_eos = !job->request.ignore_eos;
        for (const std::string& s : job->request.stop) {
          std::vector<int32_t> seq;
          for (unsigned char ch : s) seq.push_back(ch);
          spec.stop_sequences.push_back(std::move(seq));
        }
        spec.observe = true;
        engine_->add_request(std::move(spec));
      }
    }
    for (auto& job : cancels)
      for (uint64_t id : job->engine_ids) engine_->cancel(id);
    expire_deadlines();
    for (const RequestResult& r : engine_->take_finished()) on_finished(r);
    if (engine_->has_unfinished()) {
      auto record = engine_->step();
      if (!record.ok()) {
        // An engine error is not the client's fault: fail every job in flight and keep serving.
        const std::string message = std::string(record.status().message());
        std::vector<uint64_t> ids;
        for (const auto& [id, slot] : slots_) ids.push_back(id);
        for (const auto& job : active_) {
          std::lock_guard<std::mutex> lock(job->mu);
          if (job->error.empty()) job->error = "engine error: " + message;
        }
        for (uint64_t id : ids) engine_->cancel(id);
      }
      for (const RequestResult& r : engine_->take_finished()) on_finished(r);
    }
    publish_health();
  }
  publish_health();
}

}  // namespace samebits::serve
