#include "harness/scenario/workload.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/fixed_math.h"

namespace samebits {

uint64_t WorkloadRng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int64_t WorkloadRng::uniform_int(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t span = uint64_t(hi - lo) + 1;
  // Rejection sampling: no modulo bias, integer only.
  const uint64_t limit = span == 0 ? 0 : (~uint64_t(0) - (~uint64_t(0) % span));
  uint64_t x;
  do x = next();
  while (span != 0 && x >= limit);
  return lo + int64_t(span == 0 ? x : x % span);
}

double WorkloadRng::uniform01() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }

int sample_length(const LengthDistribution& d, WorkloadRng& rng) {
  switch (d.kind) {
    case LengthDistribution::Kind::kFixed: return d.min;
    case LengthDistribution::Kind::kUniform: return int(rng.uniform_int(d.min, d.max));
    case LengthDistribution::Kind::kNormal: {
      // Irwin-Hall: the sum of 12 uniforms minus 6 has mean 0 and variance 1.
      double z = -6.0;
      for (int i = 0; i < 12; ++i) z += rng.uniform01();
      const double v = d.mean + d.stddev * z;
      const int64_t rounded = v < 0 ? 0 : int64_t(v + 0.5);
      return int(std::clamp<int64_t>(rounded, d.min, d.max));
    }
  }
  return d.min;
}

namespace {

// Arrival steps of `n` requests under the process.
std::vector<int64_t> arrival_steps(const ArrivalProcess& a, int64_t n, WorkloadRng& rng) {
  std::vector<int64_t> steps;
  steps.reserve(size_t(n));
  switch (a.kind) {
    case ArrivalProcess::Kind::kUniform:
      for (int64_t i = 0; i < n; ++i) steps.push_back(int64_t(double(i) / a.rate));
      break;
    case ArrivalProcess::Kind::kBurst: {
      const int64_t every = std::max<int64_t>(1, int64_t(double(a.burst_size) / a.rate + 0.5));
      for (int64_t i = 0; i < n; ++i) steps.push_back((i / a.burst_size) * every);
      break;
    }
    case ArrivalProcess::Kind::kPoisson: {
      // Knuth: count uniforms until their product drops below exp(-rate). Exact products and one
      // fixed_exp make the draw identical everywhere.
      const double limit = fixed_exp(-a.rate);
      for (int64_t step = 0; int64_t(steps.size()) < n; ++step) {
        double p = rng.uniform01();
        while (p > limit && int64_t(steps.size()) < n) {
          steps.push_back(step);
          p *= rng.uniform01();
        }
      }
      break;
    }
  }
  return steps;
}

// Printable filler for background prompts: lowercase words and spaces, so the model sees
// text-like input (one single-byte token per byte).
int32_t filler_token(WorkloadRng& rng, const TextTokenizer& tokenizer) {
  static constexpr char kAlphabet[] = "etaoinshrdlucmfwypvbgkjqxz      ";
  return tokenizer.byte_token(static_cast<unsigned char>(kAlphabet[rng.uniform_int(0, sizeof(kAlphabet) - 2)]));
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> encode_target_prompt(const Scenario& scenario, const TextTokenizer& tokenizer) {
  if (!scenario.prompt_tokens.empty()) return scenario.prompt_tokens;
  std::string field = "prompt";
  absl::StatusOr<std::vector<int32_t>> ids;
  if (!scenario.messages.empty()) {
    field = "messages";
    auto chat = tokenizer.chat_template();
    if (!chat.ok()) return absl::InvalidArgumentError(absl::StrCat(scenario.file, ": messages: ", chat.status().message()));
    auto text = chat->render(scenario.messages, scenario.chat);
    if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat(scenario.file, ": ", text.status().message()));
    // As transformers' apply_chat_template(tokenize=True): the rendering without added specials.
    ids = tokenizer.encode_text(*text, /*add_special=*/false);
  } else {
    ids = tokenizer.encode_text(scenario.prompt, /*add_special=*/true);
  }
  if (!ids.ok()) return absl::InvalidArgumentError(absl::StrCat(scenario.file, ": ", field, ": ", ids.status().message()));
  if (ids->empty()) return absl::InvalidArgumentError(absl::StrCat(scenario.file, ": ", field, ": encodes to no tokens"));
  return ids;
}

absl::StatusOr<Workload> generate_workload(const Scenario& scenario, const TextTokenizer& tokenizer, int samples) {
  Workload w;
  w.samples = samples > 0 ? samples : scenario.samples;
  auto target = encode_target_prompt(scenario, tokenizer);
  if (!target.ok()) return target.status();
  w.target_prompt = std::move(*target);

  WorkloadRng rng(scenario.seed);
  const int64_t total = int64_t(w.samples) + scenario.mix.background;
  // Seeded order of the stream: which arrival slots are targets (Fisher-Yates over the flags).
  std::vector<int8_t> is_target(size_t(total), 0);
  std::fill(is_target.begin(), is_target.begin() + w.samples, 1);
  for (int64_t i = total - 1; i > 0; --i) std::swap(is_target[size_t(i)], is_target[size_t(rng.uniform_int(0, i))]);
  std::vector<int64_t> steps = arrival_steps(scenario.mix.arrival, total, rng);

  // At most one target per step: a target that would share its step with an earlier one moves on.
  int64_t last_target_step = -1;
  for (int64_t i = 0; i < total; ++i) {
    if (!is_target[size_t(i)]) continue;
    if (steps[size_t(i)] <= last_target_step) steps[size_t(i)] = last_target_step + 1;
    last_target_step = steps[size_t(i)];
  }

  int sample = 0;
  const int target_len = int(w.target_prompt.size());
  for (int64_t i = 0; i < total; ++i) {
    Arrival a;
    a.step = steps[size_t(i)];
    a.spec.sampling = scenario.sampling;
    a.spec.stop_at_eos = scenario.stop_at_eos;
    if (is_target[size_t(i)]) {
      a.sample = sample++;
      a.spec.prompt = w.target_prompt;
      a.spec.max_new_tokens = scenario.max_new_tokens;
      a.spec.observe = true;
    } else {
      const int len = sample_length(scenario.mix.prompt_len, rng);
      a.spec.max_new_tokens = sample_length(scenario.mix.output_len, rng);
      const bool shared = rng.uniform01() < scenario.mix.shared_prefix_fraction;
      std::vector<int32_t> prompt;
      if (shared) {
        // A target prefix of random length (at least two tokens), then filler.
        const int prefix = int(rng.uniform_int(std::min(2, target_len), target_len));
        prompt.assign(w.target_prompt.begin(), w.target_prompt.begin() + prefix);
        ++w.shared_prefix_requests;
      } else if (tokenizer.prompt_bos() >= 0) {
        prompt.push_back(tokenizer.prompt_bos());
      }
      while (int(prompt.size()) < len) prompt.push_back(filler_token(rng, tokenizer));
      a.spec.prompt = std::move(prompt);
    }
    w.arrivals.push_back(std::move(a));
  }
  std::stable_sort(w.arrivals.begin(), w.arrivals.end(),
                   [](const Arrival& x, const Arrival& y) { return x.step < y.step; });
  for (size_t i = 0; i < w.arrivals.size(); ++i) w.arrivals[i].spec.id = i + 1;
  return w;
}

}  // namespace samebits
