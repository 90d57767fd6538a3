#include "tests/engine/soak.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <random>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "xxhash.h"

namespace samebits::testing {
namespace {

constexpr int kBlockSize = 8, kNumBlocks = 24;

EngineConfig soak_config() {
  EngineConfig c;
  c.block_size = kBlockSize;
  c.num_blocks = kNumBlocks;
  c.max_tokens_per_step = 96;
  c.max_seqs = 32;
  c.max_chunk = 24;
  c.exec.mode = Mode::kInvariant;
  c.exec.num_threads = 1;
  return c;
}

double rss_mib() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return double(resident) * double(::sysconf(_SC_PAGESIZE)) / (1 << 20);
}

std::string reason_kind(const std::string& reason) {
  std::string out;
  for (char c : reason) {
    const bool digit = c >= '0' && c <= '9';
    if (digit && !out.empty() && out.back() == '#') continue;
    out.push_back(digit ? '#' : c);
  }
  return out;
}

// Request i of the stream (the same for a given seed). `impossible` marks the ~1% the engine
// must reject: empty prompt, beyond the context, more KV blocks than the cache, bad top_p.
RequestSpec soak_request(uint64_t seed, int64_t i, const std::vector<std::vector<int32_t>>& prefixes, bool* impossible) {
  std::mt19937_64 rng(seed ^ (uint64_t(i) * 0x9E3779B97F4A7C15ull));
  RequestSpec s;
  s.id = uint64_t(i);
  if (rng() % 2) s.prompt = prefixes[rng() % prefixes.size()];
  const std::vector<int32_t> tail = random_prompt(rng(), 1 + int(rng() % 12));
  s.prompt.insert(s.prompt.end(), tail.begin(), tail.end());
  s.max_new_tokens = 1 + int(rng() % 10);
  s.stop_at_eos = rng() % 2 == 0;
  if (rng() % 4 == 0) {
    s.sampling.temperature = 0.8f;
    s.sampling.top_k = int(rng() % 50);
    s.sampling.seed = rng();
  }
  if (rng() % 6 == 0)
    for (int k = 0; k < 16; ++k) s.stop_sequences.push_back({int32_t(rng() % 256)});
  *impossible = false;
  if (rng() % 100 == 0) {
    *impossible = true;
    switch (rng() % 4) {
      case 0: s.prompt.clear(); break;
      case 1: s.prompt = random_prompt(rng(), 1100); break;                        // beyond the context
      case 2: s.prompt = random_prompt(rng(), kBlockSize * kNumBlocks + 8); break;  // beyond the cache
      default: s.sampling.top_p = 0.f; break;
    }
  }
  return s;
}

uint64_t chain(uint64_t digest, int32_t token, std::span<const float> logits) {
  digest = XXH3_64bits_withSeed(&token, sizeof token, digest);
  return XXH3_64bits_withSeed(logits.data(), logits.size_bytes(), digest);
}

}  // namespace

SoakFigures run_soak(int64_t num_requests, uint64_t seed, int observe_every) {
  SoakFigures f;
  f.requests = num_requests;
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  std::unique_ptr<Model> model = make_model(engine_test_config("tiny"), kNumBlocks, kBlockSize);
  std::vector<std::vector<int32_t>> prefixes;
  for (int i = 0; i < 6; ++i) prefixes.push_back(random_prompt(seed * 100 + uint64_t(i), 8 + 4 * i));

  std::vector<uint8_t> answers(size_t(num_requests), 0);
  std::vector<uint8_t> impossible(size_t(num_requests), 0);
  std::map<uint64_t, uint64_t> digests;  // observed request -> chained digest
  {
    auto engine = Engine::create(*model, soak_config());
    if (!engine.ok()) {
      f.error = std::string(engine.status().message());
      return f;
    }
    Engine& e = **engine;
    e.set_observer([&](uint64_t id, int, int32_t token, std::span<const float> logits) {
      digests[id] = chain(digests[id], token, logits);
    });
    std::mt19937_64 arrivals(seed);
    int64_t next = 0, next_report = std::max<int64_t>(1, num_requests / 10);
    auto collect = [&] {
      for (RequestResult& r : e.take_finished()) {
        if (r.id >= uint64_t(num_requests)) continue;
        if (++answers[size_t(r.id)] > 1) ++f.answered_twice;
        if (r.reason == FinishReason::kRejected) {
          ++f.rejected;
          if (!impossible[size_t(r.id)] || r.reject_reason.empty()) ++f.wrongly_rejected;
          ++f.rejections_by_reason[reason_kind(r.reject_reason)];
          continue;
        }
        if (impossible[size_t(r.id)] || r.reason == FinishReason::kRunning) ++f.wrongly_rejected;
        ++f.finished;
        f.eos += r.reason == FinishReason::kEos;
        f.stop_sequence += r.reason == FinishReason::kStopSequence;
      }
    };
    while (next < num_requests || e.has_unfinished()) {
      // A few arrivals per step, more than the engine can serve at once: the queue and the KV
      // pool stay under pressure.
      for (int k = int(arrivals() % 4); k > 0 && next < num_requests; --k, ++next) {
        bool bad = false;
        RequestSpec s = soak_request(seed, next, prefixes, &bad);
        impossible[size_t(next)] = bad;
        s.observe = observe_every > 0 && next % observe_every == 0 && !bad;
        f.sampled += s.sampling.temperature > 0;
        e.add_request(std::move(s));
      }
      if (e.has_unfinished()) {
        auto record = e.step();
        if (!record.ok()) {
          f.error = std::string(record.status().message());
          break;
        }
        if (++f.steps % 256 == 0) {
          if (std::string bad = e.check_invariants(); !bad.empty()) {
            f.error = absl::StrCat("after step ", f.steps, ": ", bad);
            break;
          }
        }
      }
      collect();
      if (f.rss_warm_mib == 0 && next >= num_requests / 10) f.rss_warm_mib = rss_mib();
      // A progress line every tenth of the stream, so that a run stopped part way still says how
      // far it got and how memory went.
      if (next >= next_report && next > 0) {
        std::fprintf(stderr, "soak: %lld of %lld requests submitted after %.0f s, %lld steps, RSS %.1f MiB\n",
                     (long long)next, (long long)num_requests,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                     (long long)f.steps, rss_mib());
        next_report += std::max<int64_t>(1, num_requests / 10);
      }
    }
    collect();
    if (f.error.empty()) {
      if (std::string bad = e.check_invariants(); !bad.empty()) f.error = "at the end: " + bad;
    }
    f.leaked_blocks = kNumBlocks - e.free_blocks();
    f.preemptions = e.stats().preemptions;
    f.prefix_hit_requests = e.stats().prefix_hit_requests;
  }
  for (int64_t i = 0; i < num_requests; ++i) f.lost += answers[size_t(i)] == 0;
  f.rss_end_mib = rss_mib();

  // The observed requests alone, each in a fresh engine: the same digest, bit for bit.
  for (const auto& [id, digest] : digests) {
    bool bad = false;
    RequestSpec s = soak_request(seed, int64_t(id), prefixes, &bad);
    s.observe = true;
    std::vector<Arrival> alone = {{0, s}};
    RunOutcome o = run_workload(*model, soak_config(), alone);
    uint64_t d = 0;
    const Observed& obs = o.observed[id];
    for (size_t t = 0; t < obs.tokens.size(); ++t) d = chain(d, obs.tokens[t], obs.logits[t]);
    ++f.observed;
    f.observed_mismatch += d != digest || !o.error.empty();
  }
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  f.cpu_seconds = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  return f;
}

void expect_soak_clean(const SoakFigures& f) {
  EXPECT_EQ(f.error, "");
  EXPECT_EQ(f.lost, 0);
  EXPECT_EQ(f.answered_twice, 0);
  EXPECT_EQ(f.wrongly_rejected, 0);
  EXPECT_EQ(f.leaked_blocks, 0);
  EXPECT_EQ(f.finished + f.rejected, f.requests);
  EXPECT_GT(f.rejected, 0);
  EXPECT_GT(f.preemptions, 0);
  EXPECT_GT(f.prefix_hit_requests, 0);
  EXPECT_GT(f.eos + f.stop_sequence, 0);
  EXPECT_GT(f.observed, 0);
  EXPECT_EQ(f.observed_mismatch, 0);
  std::printf("soak: %lld requests in %.1f s (%.1f s of CPU): %lld finished (%lld EOS, %lld stop sequence, %lld sampled), %lld rejected, "
              "%lld lost, %lld answered twice, %lld leaked blocks; %lld steps, %lld preemptions, %lld prefix-hit requests; "
              "%lld observed, %lld differ from their run alone; RSS %.1f MiB at 10%%, %.1f MiB at the end (growth %.1f MiB)\n",
              (long long)f.requests, f.seconds, f.cpu_seconds, (long long)f.finished, (long long)f.eos, (long long)f.stop_sequence,
              (long long)f.sampled, (long long)f.rejected, (long long)f.lost, (long long)f.answered_twice,
              (long long)f.leaked_blocks, (long long)f.steps, (long long)f.preemptions, (long long)f.prefix_hit_requests,
              (long long)f.observed, (long long)f.observed_mismatch, f.rss_warm_mib, f.rss_end_mib,
              f.rss_end_mib - f.rss_warm_mib);
  for (const auto& [reason, count] : f.rejections_by_reason) std::printf("soak: rejected %lld: %s\n", (long long)count, reason.c_str());
}

}  // namespace samebits::testing
