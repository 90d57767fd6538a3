#include "tests/engine/schedule_ahead_case.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace samebits::testing {
namespace {

constexpr int kBlocks = 30, kBlockSize = 16;

std::vector<Arrival> base_arrivals(int vocab) {
  const std::vector<int32_t> shared = random_prompt(999, 2 * kBlockSize, vocab);
  std::vector<Arrival> arrivals;
  for (uint64_t id = 1; id <= 14; ++id) {
    Arrival a;
    a.step = int64_t(id / 5) * 3;
    a.spec.id = id;
    std::vector<int32_t> tail = random_prompt(id, 6 + int(id * 11 % 70), vocab);
    if (id % 2 == 0) a.spec.prompt = shared;  // a prefix hit once the first of them has run
    a.spec.prompt.insert(a.spec.prompt.end(), tail.begin(), tail.end());
    a.spec.max_new_tokens = 16 + int(id * 7 % 24);
    a.spec.stop_at_eos = false;
    a.spec.observe = true;
    arrivals.push_back(std::move(a));
  }
  return arrivals;
}

EngineConfig tight_engine(Mode mode) {
  EngineConfig c;
  c.block_size = kBlockSize;
  c.num_blocks = kBlocks;
  c.max_tokens_per_step = 64;
  c.max_chunk = 24;  // prompts beyond it are computed in chunks
  c.max_seqs = 8;
  c.exec.mode = mode;
  return c;
}

}  // namespace

AheadCase make_ahead_case(const std::string& name, Mode mode, const Backend* backend) {
  AheadCase c;
  ModelConfig config = engine_test_config(name);
  c.engine = tight_engine(mode);
  c.arrivals = base_arrivals(config.vocab_size);
  // A first run, without stops, shows what each request generates. EOS: the token that most
  // requests generate at an index >= 2 (a first occurrence there ends them mid-flight).
  {
    std::unique_ptr<Model> probe = make_model(config, kBlocks, kBlockSize, 1, backend);
    EngineConfig serial = c.engine;
    serial.schedule_ahead = false;
    const RunOutcome first = run_workload(*probe, serial, c.arrivals);
    std::map<int32_t, int> requests_with;
    for (const auto& [id, r] : first.results) {
      std::map<int32_t, bool> seen;
      for (size_t i = 2; i < r.tokens.size(); ++i) seen[r.tokens[i]] = true;
      for (const auto& [token, unused] : seen) ++requests_with[token];
    }
    int best = 0;
    for (const auto& [token, n] : requests_with) {
      if (n > best) best = n, config.eos_token_id = token;
    }
    // Stopping at EOS: one request in four and those that generate it; one in four stops at the
    // pair of tokens it generates at 5, 6; the others end by their count.
    for (Arrival& a : c.arrivals) {
      const std::vector<int32_t>& t = first.results.at(a.spec.id).tokens;
      a.spec.stop_at_eos = a.spec.id % 4 == 1 || std::find(t.begin() + std::min<ptrdiff_t>(2, std::ptrdiff_t(t.size())), t.end(),
                                                           config.eos_token_id) != t.end();
      if (a.spec.id % 4 == 0 && t.size() > 7) a.spec.stop_sequences = {{t[5], t[6]}};
    }
  }
  c.model = make_model(config, kBlocks, kBlockSize, 1, backend);
  return c;
}

AheadRuns run_with_and_without_ahead(AheadCase& c) {
  AheadRuns runs;
  EngineConfig ec = c.engine;
  ec.schedule_ahead = false;
  runs.serial = run_workload(*c.model, ec, c.arrivals);
  ec.schedule_ahead = true;
  runs.ahead = run_workload(*c.model, ec, c.arrivals);
  return runs;
}

int requests_differing_from_alone(AheadCase& c, const RunOutcome& batched) {
  int differing = 0;
  for (const Arrival& a : c.arrivals) {
    const RunOutcome alone = run_workload(*c.model, c.engine, {{0, a.spec}});
    EXPECT_EQ(alone.error, "") << "request " << a.spec.id;
    const auto it = batched.observed.find(a.spec.id);
    if (it == batched.observed.end() || count_differences(alone.observed.at(a.spec.id), it->second) != 0) ++differing;
  }
  return differing;
}

namespace {

// Every request with the same tokens, finish and observed logits in both runs.
void expect_same_bits(const RunOutcome& a, const RunOutcome& b, size_t requests) {
  ASSERT_EQ(a.results.size(), requests);
  ASSERT_EQ(b.results.size(), requests);
  for (const auto& [id, r] : a.results) {
    EXPECT_EQ(r.tokens, b.results.at(id).tokens) << "request " << id;
    EXPECT_EQ(r.reason, b.results.at(id).reason) << "request " << id;
    ASSERT_EQ(b.observed.count(id), 1u) << "request " << id;
    EXPECT_EQ(count_differences(a.observed.at(id), b.observed.at(id)), 0) << "request " << id;
  }
}

}  // namespace

void check_invariant_mode_ahead(const std::string& model, const Backend* backend) {
  AheadCase c = make_ahead_case(model, Mode::kInvariant, backend);
  const AheadRuns runs = run_with_and_without_ahead(c);
  ASSERT_EQ(runs.serial.error, "");
  ASSERT_EQ(runs.ahead.error, "");
  const EngineStats& s = runs.ahead.stats;
  std::printf("[invariant] %lld of %lld steps scheduled ahead, %lld rows discarded; %d EOS, %d stop sequence; "
              "%lld preemptions, %lld prefix hits, %d unsampled chunks\n",
              static_cast<long long>(s.scheduled_ahead_steps), static_cast<long long>(s.steps),
              static_cast<long long>(s.discarded_rows), finished_by(runs.ahead, FinishReason::kEos),
              finished_by(runs.ahead, FinishReason::kStopSequence), static_cast<long long>(s.preemptions),
              static_cast<long long>(s.prefix_hit_requests), unsampled_chunks(runs.ahead));
  for (const auto* o : {&runs.serial, &runs.ahead}) {
    const EngineStats& t = o->stats;
    const double steps = double(std::max<int64_t>(t.steps, 1));
    std::printf("[invariant, %s] host %.3f ms/step (%.3f with the device idle), %.2f waits/step, %lld steps overlapped, "
                "%lld replayed from graphs\n",
                o == &runs.serial ? "serial" : "ahead", 1e3 * (t.step_seconds - t.host_wait_seconds) / steps,
                1e3 * t.host_idle_device_seconds / steps, double(t.host_waits) / steps,
                static_cast<long long>(t.overlapped_steps), static_cast<long long>(t.graph_replays));
  }
  std::fflush(stdout);  // under a sanitizer that may be killed in the runs alone, these lines still come out
  EXPECT_EQ(runs.serial.stats.scheduled_ahead_steps, 0);
  EXPECT_GT(s.scheduled_ahead_steps, s.steps / 2);
  EXPECT_GT(s.discarded_rows, 0) << "no request ended by a sampled value while its next row computed";
  EXPECT_GT(finished_by(runs.ahead, FinishReason::kEos), 0);
  EXPECT_GT(finished_by(runs.ahead, FinishReason::kStopSequence), 0);
  EXPECT_GT(s.preemptions, 0);
  EXPECT_GT(s.prefix_hit_requests, 0);
  EXPECT_GT(unsampled_chunks(runs.ahead), 0);
  EXPECT_EQ(runs.ahead.free_blocks_at_end, c.engine.num_blocks) << "discarded rows' blocks leaked";
  expect_same_bits(runs.serial, runs.ahead, c.arrivals.size());
  EXPECT_EQ(requests_differing_from_alone(c, runs.ahead), 0);
}

void check_default_mode_ahead(const std::string& model, const Backend* backend) {
  AheadCase c = make_ahead_case(model, Mode::kDefault, backend);
  const AheadRuns runs = run_with_and_without_ahead(c);
  ASSERT_EQ(runs.serial.error, "");
  ASSERT_EQ(runs.ahead.error, "");
  const EngineStats& s = runs.ahead.stats;
  std::printf("[default] %lld of %lld steps scheduled ahead, %lld rows discarded\n",
              static_cast<long long>(s.scheduled_ahead_steps), static_cast<long long>(s.steps),
              static_cast<long long>(s.discarded_rows));
  EXPECT_GT(s.scheduled_ahead_steps, 0);
  EXPECT_LT(s.scheduled_ahead_steps, s.steps - 1) << "steps whose rows may stop on a sampled value were scheduled ahead";
  EXPECT_EQ(s.discarded_rows, 0);
  ASSERT_EQ(runs.serial.records.size(), runs.ahead.records.size());
  for (size_t i = 0; i < runs.serial.records.size(); ++i) {
    const StepRecord &a = runs.serial.records[i], &b = runs.ahead.records[i];
    EXPECT_EQ(a.preempted, b.preempted) << "step " << i;
    EXPECT_EQ(a.admitted, b.admitted) << "step " << i;
    ASSERT_EQ(a.entries.size(), b.entries.size()) << "step " << i;
    for (size_t e = 0; e < a.entries.size(); ++e) {
      EXPECT_TRUE(a.entries[e].request_id == b.entries[e].request_id &&
                  a.entries[e].start_position == b.entries[e].start_position &&
                  a.entries[e].num_tokens == b.entries[e].num_tokens && a.entries[e].blocks == b.entries[e].blocks)
          << "step " << i << " entry " << e;
    }
  }
  expect_same_bits(runs.serial, runs.ahead, c.arrivals.size());
}

void check_planted_variance_seen_ahead(const std::string& model, const Backend& planted) {
  AheadCase c = make_ahead_case(model, Mode::kInvariant, &planted);
  const RunOutcome batched = run_workload(*c.model, c.engine, c.arrivals);
  ASSERT_EQ(batched.error, "");
  EXPECT_GT(batched.stats.scheduled_ahead_steps, 0);
  const int differing = requests_differing_from_alone(c, batched);
  std::printf("[planted] %d of %zu requests differ from their run alone\n", differing, c.arrivals.size());
  EXPECT_GT(differing, 0);
}

int finished_by(const RunOutcome& o, FinishReason reason) {
  int n = 0;
  for (const auto& [id, r] : o.results) n += r.reason == reason;
  return n;
}

int unsampled_chunks(const RunOutcome& o) {
  int n = 0;
  for (const StepRecord& s : o.records) {
    for (const auto& e : s.entries) n += !e.samples && e.num_tokens > 1;
  }
  return n;
}

}  // namespace samebits::testing
