#include "tests/engine/engine_fixture.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace samebits::testing {

ModelConfig engine_test_config(const std::string& name) {
  ModelConfig c = *builtin_config("tiny");
  if (name == "micro") {
    c.name = "micro";
    c.hidden_size = 64;
    c.intermediate_size = 128;
    c.num_layers = 2;
    c.num_heads = 2;
    c.num_kv_heads = 1;
    c.head_dim = 32;
  }
  if (name == "tiny-one-layer") {
    c.name = "tiny-one-layer";
    c.num_layers = 1;
  }
  return c;
}

std::unique_ptr<Model> make_model(const ModelConfig& config, int num_blocks, int block_size, uint64_t seed,
                                  const Backend* backend) {
  auto model = Model::create(backend ? *backend : cpu_backend(), config, synthetic_weights(config, seed), {num_blocks, block_size});
  if (!model.ok()) return nullptr;
  return *std::move(model);
}

RunOutcome run_workload(Model& model, const EngineConfig& config, const std::vector<Arrival>& arrivals,
                        const std::vector<StepRecord>* forced, int64_t max_steps) {
  RunOutcome outcome;
  auto engine = Engine::create(model, config);
  if (!engine.ok()) {
    outcome.error = std::string(engine.status().message());
    return outcome;
  }
  (*engine)->set_observer([&](uint64_t id, int index, int32_t token, std::span<const float> logits) {
    Observed& o = outcome.observed[id];
    if (index != int(o.tokens.size())) outcome.error = absl::StrCat("request ", id, ": token index ", index, " out of order");
    o.tokens.push_back(token);
    o.logits.emplace_back(logits.begin(), logits.end());
  });
  std::vector<Arrival> pending = arrivals;
  std::stable_sort(pending.begin(), pending.end(), [](const Arrival& a, const Arrival& b) { return a.step < b.step; });
  size_t next = 0;
  for (int64_t step = 0; step < max_steps; ++step) {
    while (next < pending.size() && pending[next].step <= step) (*engine)->add_request(pending[next++].spec);
    if (next == pending.size() && !(*engine)->has_unfinished()) break;
    if (forced != nullptr && size_t(step) >= forced->size()) {
      outcome.error = "the recorded schedule ended before the workload";
      break;
    }
    auto record = (*engine)->step(forced ? &(*forced)[size_t(step)] : nullptr);
    if (!record.ok()) {
      outcome.error = std::string(record.status().message());
      break;
    }
    outcome.records.push_back(*std::move(record));
    if (std::string bad = (*engine)->check_invariants(); !bad.empty()) {
      outcome.error = absl::StrCat("after step ", step, ": ", bad);
      break;
    }
    for (RequestResult& r : (*engine)->take_finished()) outcome.results[r.id] = std::move(r);
  }
  for (RequestResult& r : (*engine)->take_finished()) outcome.results[r.id] = std::move(r);
  if (outcome.error.empty() && (*engine)->has_unfinished()) outcome.error = "requests left unfinished";
  outcome.stats = (*engine)->stats();
  outcome.free_blocks_at_end = (*engine)->free_blocks();
  return outcome;
}

std::vector<int32_t> random_prompt(uint64_t seed, int length, int vocab) {
  std::vector<int32_t> t;
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (int i = 0; i < length; ++i) {
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    t.push_back(int32_t((x * 0x2545F4914F6CDD1Dull >> 33) % uint64_t(vocab)));
  }
  return t;
}

int count_differences(const Observed& a, const Observed& b) {
  const size_t n = std::min(a.logits.size(), b.logits.size());
  int diff = int(std::max(a.logits.size(), b.logits.size()) - n);
  for (size_t i = 0; i < n; ++i) {
    diff += a.logits[i].size() != b.logits[i].size() ||
            std::memcmp(a.logits[i].data(), b.logits[i].data(), a.logits[i].size() * sizeof(float)) != 0;
  }
  return diff;
}

}  // namespace samebits::testing
