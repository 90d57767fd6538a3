#include "harness/scenario/live.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "harness/golden/digest.h"

namespace samebits {
namespace {

// Requests submitted by clients, waiting for the engine thread.
class ArrivalQueue {
 public:
  void push(size_t index) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(index);
    }
    cv_.notify_all();
  }
  // Everything queued; blocks for the first item when `wait` and the queue is empty.
  std::vector<size_t> drain(bool wait) {
    std::unique_lock<std::mutex> lock(mu_);
    if (wait) cv_.wait(lock, [&] { return !items_.empty() || stopped_; });
    std::vector<size_t> out(items_.begin(), items_.end());
    items_.clear();
    return out;
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }
  // Sleeps until `deadline` or stop(); false when stopped.
  bool sleep_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    return !cv_.wait_until(lock, deadline, [&] { return stopped_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<size_t> items_;
  bool stopped_ = false;
};

// Joins the client threads on every way out of run_live.
struct Clients {
  ArrivalQueue* queue;
  std::vector<std::thread> threads;
  ~Clients() {
    queue->stop();
    for (auto& t : threads) t.join();
  }
};

}  // namespace

absl::StatusOr<ModeRun> run_live(const RunSetup& setup, const Workload& workload, Mode mode) {
  using namespace runner_detail;
  const Scenario& sc = *setup.scenario;
  auto session_or = open_run_session(setup, workload, mode);
  if (!session_or.ok()) return session_or.status();
  Session& session = **session_or;
  Engine& engine = *session.engine;

  ModeRun out;
  out.mode = mode;
  const auto& arrivals = workload.arrivals;
  ArrivalQueue queue;
  const auto start = std::chrono::steady_clock::now();
  {
    Clients clients{&queue, {}};
    const int n_clients = std::max(1, sc.live.clients);
    for (int c = 0; c < n_clients; ++c) {
      clients.threads.emplace_back([&, c] {
        for (size_t i = size_t(c); i < arrivals.size(); i += size_t(n_clients)) {
          const auto due = start + std::chrono::microseconds(arrivals[i].step * sc.live.step_us);
          if (!queue.sleep_until(due)) return;
          queue.push(i);
        }
      });
    }
    size_t received = 0;
    int64_t engine_steps = 0;
    int reported = -1;
    while (received < arrivals.size() || engine.has_unfinished()) {
      for (size_t i : queue.drain(/*wait=*/!engine.has_unfinished())) {
        engine.add_request(arrivals[i].spec);
        out.submitted.push_back({engine_steps, arrivals[i].spec.id});
        ++received;
      }
      if (engine.has_unfinished()) {
        if (absl::Status s = run_step(session, nullptr, &out, /*keep_records=*/true); !s.ok()) return s;
        ++engine_steps;
      } else if (absl::Status s = collect_finished(session); !s.ok()) {
        return s;
      }
      if (setup.progress && session.targets_done != reported) {
        reported = session.targets_done;
        setup.progress(reported, workload.samples);
      }
    }
  }
  if (absl::Status s = finish_run(session, start, &out); !s.ok()) return s;
  return out;
}

namespace {

bool same_schedule(const StepRecord& a, const StepRecord& b) {
  if (a.entries.size() != b.entries.size()) return false;
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const auto& x = a.entries[i];
    const auto& y = b.entries[i];
    if (x.request_id != y.request_id || x.start_position != y.start_position || x.num_tokens != y.num_tokens ||
        x.samples != y.samples || x.blocks != y.blocks)
      return false;
  }
  return a.preempted == b.preempted && a.admitted == b.admitted;
}

}  // namespace

absl::StatusOr<ModeRun> replay_run(const Trace& trace, const TraceRun& run, const ModelSource& model,
                                   const Backend& backend, const ReplayHooks* hooks) {
  using namespace runner_detail;
  const RunIdentity& recorded = trace.identity;
  if (model.weights_digest != recorded.model.weights_digest)
    return absl::InvalidArgumentError("the model's weights digest " + digest_hex(model.weights_digest) +
                                      " differs from the trace's " + digest_hex(recorded.model.weights_digest));
  Scenario sc;
  sc.engine = recorded.engine;
  const EngineConfig config = engine_config(sc, recorded.threads, run.mode);
  auto session_or = open_session(model, backend, config, trace.requests, recorded.samples);
  if (!session_or.ok()) return session_or.status();
  Session& session = **session_or;
  Engine& engine = *session.engine;
  if (hooks && hooks->op_observer) session.model->set_op_observer(hooks->op_observer);

  ModeRun out;
  out.mode = run.mode;
  const auto start = std::chrono::steady_clock::now();
  size_t next = 0;
  std::set<uint64_t> submitted_ids;
  auto submit_until = [&](int64_t engine_step) -> absl::Status {
    for (; next < run.submitted.size() && run.submitted[next].engine_step <= engine_step; ++next) {
      const uint64_t id = run.submitted[next].request_id;
      auto it = session.arrival_of_id.find(id);
      if (it == session.arrival_of_id.end())
        return absl::InvalidArgumentError(absl::StrCat("the trace submits request ", id, ", which it does not hold"));
      if (!submitted_ids.insert(id).second)
        return absl::InvalidArgumentError(absl::StrCat("the trace submits request ", id, " twice"));
      engine.add_request(it->second->spec);
      out.submitted.push_back(run.submitted[next]);
    }
    return absl::OkStatus();
  };
  for (size_t k = 0; k < run.records.size(); ++k) {
    if (absl::Status s = submit_until(int64_t(k)); !s.ok()) return s;
    if (hooks && hooks->before_step) hooks->before_step(k, run.records[k]);
    if (absl::Status s = run_step(session, &run.records[k], &out, /*keep_records=*/true); !s.ok())
      return absl::Status(s.code(), absl::StrCat("replay of step ", k, ": ", s.message()));
    if (!same_schedule(out.records.back(), run.records[k]))
      return absl::InternalError(absl::StrCat("replay of step ", k, " ran a different schedule than the trace records"));
    if (hooks && hooks->stop_after && hooks->stop_after(k)) return out;
  }
  if (absl::Status s = submit_until(INT64_MAX); !s.ok()) return s;
  if (engine.has_unfinished()) return absl::InvalidArgumentError("the trace ends while requests are still running");
  if (absl::Status s = finish_run(session, start, &out); !s.ok()) return s;
  return out;
}

}  // namespace samebits
