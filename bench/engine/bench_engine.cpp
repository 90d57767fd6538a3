// Engine throughput for the tiny configuration (seeded synthetic weights) in both modes, on two
// fixed seeded workloads:
//   mixed:   96 requests, random prompts of 16..144 bytes, 64 new tokens each, 8 arriving per step;
//   feynman: 64 copies of the Feynman prompt (prefix cache hits) with 128 new tokens, among 32
//            random background requests, 4 arriving per step.
// Counters: generated tokens/s and computed (prefill + decode) tokens/s, wall clock. After the
// runs, one line per workload gives the invariant/default throughput ratio.
// Flags besides Google Benchmark's: --threads=N (CPU threads, 0 = OpenMP's default).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "harness/engine/engine.h"
#include "models/tiny_qwen/tokenizer.h"

namespace samebits {
namespace {

int g_threads = 0;

struct Arrival {
  int64_t step;
  RequestSpec spec;
};

std::vector<int32_t> random_bytes(std::mt19937_64& rng, int n) {
  std::vector<int32_t> t = {256};
  for (int i = 0; i < n; ++i) t.push_back(int32_t(rng() % 256));
  return t;
}

RequestSpec make_spec(uint64_t id, std::vector<int32_t> prompt, int max_new_tokens) {
  RequestSpec s;
  s.id = id;
  s.prompt = std::move(prompt);
  s.max_new_tokens = max_new_tokens;
  s.stop_at_eos = false;  // synthetic weights: keep every request's length fixed
  return s;
}

std::vector<Arrival> make_workload(const std::string& name) {
  std::mt19937_64 rng(20261130);
  std::vector<Arrival> out;
  if (name == "mixed") {
    for (int i = 0; i < 96; ++i) {
      out.push_back({i / 8, make_spec(uint64_t(i), random_bytes(rng, 16 + int(rng() % 129)), 64)});
    }
  } else {
    const std::vector<int32_t> feynman = ByteTokenizer{}.encode("Tell me about Richard Feynman.\n");
    for (int i = 0; i < 96; ++i) {
      const bool background = i % 3 == 2;
      out.push_back({i / 4, make_spec(uint64_t(i), background ? random_bytes(rng, 16 + int(rng() % 64)) : feynman,
                                      background ? 32 : 128)});
    }
  }
  return out;
}

Model& tiny_model() {
  static std::unique_ptr<Model> model = [] {
    const ModelConfig config = *builtin_config("tiny");
    auto m = Model::create(cpu_backend(), config, synthetic_weights(config, 1), {2048, 16});
    if (!m.ok()) {
      std::fprintf(stderr, "%s\n", m.status().ToString().c_str());
      std::exit(1);
    }
    return *std::move(m);
  }();
  return *model;
}

void BM_Engine(benchmark::State& state, const std::string& workload, Mode mode) {
  const std::vector<Arrival> arrivals = make_workload(workload);
  EngineConfig config;
  config.block_size = 16;
  config.num_blocks = 2048;
  config.max_tokens_per_step = 256;
  config.max_seqs = 64;
  config.exec.mode = mode;
  config.exec.num_threads = g_threads;
  int64_t generated = 0, computed = 0, steps = 0;
  for (auto _ : state) {
    auto engine = Engine::create(tiny_model(), config);
    if (!engine.ok()) {
      state.SkipWithError(std::string(engine.status().message()).c_str());
      return;
    }
    size_t next = 0;
    for (int64_t step = 0; next < arrivals.size() || (*engine)->has_unfinished(); ++step) {
      while (next < arrivals.size() && arrivals[next].step <= step) (*engine)->add_request(arrivals[next++].spec);
      auto record = (*engine)->step();
      if (!record.ok()) {
        state.SkipWithError(std::string(record.status().message()).c_str());
        return;
      }
      (*engine)->take_finished();
    }
    generated += (*engine)->stats().tokens_generated;
    computed += (*engine)->stats().tokens_computed;
    steps += (*engine)->stats().steps;
  }
  state.counters["generated_tok/s"] = benchmark::Counter(double(generated), benchmark::Counter::kIsRate);
  state.counters["computed_tok/s"] = benchmark::Counter(double(computed), benchmark::Counter::kIsRate);
  state.counters["steps"] = benchmark::Counter(double(steps), benchmark::Counter::kAvgIterations);
}

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred || run.run_type != Run::RT_Iteration) continue;
      const std::string name = run.benchmark_name();
      auto it = run.counters.find("generated_tok/s");
      if (it == run.counters.end()) continue;
      const bool invariant = name.find("/invariant") != std::string::npos;
      const std::string workload = name.substr(0, name.find(invariant ? "/invariant" : "/default"));
      (invariant ? rates_[workload].second : rates_[workload].first) = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void PrintRatios() const {
    std::printf("\n%-20s %16s %16s %10s\n", "workload", "default tok/s", "invariant tok/s", "inv/def");
    for (const auto& [workload, r] : rates_) {
      if (r.first <= 0 || r.second <= 0) continue;
      std::printf("%-20s %16.1f %16.1f %10.3f\n", workload.c_str(), r.first, r.second, r.second / r.first);
    }
  }

 private:
  std::map<std::string, std::pair<double, double>> rates_;  // default, invariant generated tok/s
};

}  // namespace
}  // namespace samebits

int main(int argc, char** argv) {
  using namespace samebits;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) g_threads = std::atoi(argv[i] + 10);
  }
  for (const std::string workload : {"mixed", "feynman"}) {
    for (Mode mode : {Mode::kDefault, Mode::kInvariant}) {
      const std::string name = "engine/" + workload + "/" + std::string(mode_name(mode));
      benchmark::RegisterBenchmark(name.c_str(), [workload, mode](benchmark::State& s) { BM_Engine(s, workload, mode); })
          ->Unit(benchmark::kSecond)
          ->Iterations(1)
          ->UseRealTime();
    }
  }
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
