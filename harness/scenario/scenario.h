// A scenario file (YAML) describes one experiment: the model, the target prompt and how many
// samples of it to serve, sampling, engine settings, the background traffic mixed around the
// samples, the workload seed, the modes and the backend. See scenarios/feynman.yaml for every field.
// Loading is strict: unknown keys, wrong types and out-of-range values are errors naming the file,
// line, field and value.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/engine/engine.h"
#include "kernels/mode.h"
#include "models/tiny_qwen/chat_template.h"

namespace samebits {

// Integer lengths drawn from: fixed (min == max), uniform in [min, max], or normal(mean, stddev)
// clamped to [min, max] (Irwin-Hall: exact arithmetic, the same on every machine).
struct LengthDistribution {
  enum class Kind { kFixed, kUniform, kNormal };
  Kind kind = Kind::kUniform;
  int min = 1, max = 1;
  double mean = 0, stddev = 0;
};

// When requests arrive, in simulated engine steps. rate = requests per step.
//   poisson: a Poisson(rate) number of arrivals at every step;
//   uniform: arrival i at step floor(i / rate);
//   burst:   burst_size arrivals together every round(burst_size / rate) steps.
struct ArrivalProcess {
  enum class Kind { kPoisson, kUniform, kBurst };
  Kind kind = Kind::kPoisson;
  double rate = 0.5;
  int burst_size = 8;
};

// Background traffic around the target samples.
struct TrafficMix {
  int background = 0;  // background requests in all
  LengthDistribution prompt_len{LengthDistribution::Kind::kUniform, 8, 64};
  LengthDistribution output_len{LengthDistribution::Kind::kUniform, 8, 64};
  ArrivalProcess arrival;
  // Fraction of background prompts that start with a prefix of the target prompt, of a random
  // length, so that prefix-cache hits of many lengths happen.
  double shared_prefix_fraction = 0;
};

struct EngineSettings {
  int block_size = 16;
  int kv_blocks = 1024;
  int max_tokens_per_step = 256;
  int max_seqs = 64;
  int max_chunk = 0;  // 0 = whatever the budget leaves
  bool prefix_cache = true;
  int parallel_units = 132;  // what default-mode planners size their splits for (SMs of an H200)
};

// Live mode: client threads submit with real timing; a simulated step lasts step_us microseconds.
struct LiveSettings {
  int clients = 4;
  int step_us = 2000;
};

// Client mode: the workload goes to an OpenAI-compatible server instead of the built-in engine.
struct TargetSettings {
  std::string url;          // base URL, e.g. http://127.0.0.1:8000/v1
  std::string model;        // the model name the server serves
  std::string api = "completions";  // completions | chat
  std::string api_key_env;  // environment variable holding a bearer token; "" = none
  int connections = 8;      // concurrent connections
  int top_logprobs = 5;     // alternatives asked per target token
  bool stream = false;      // server-sent events instead of whole responses
  int timeout_s = 600;      // per request
  std::string mode;         // the mode the server claims (default | invariant); "" = as it reports, else default
};

struct Scenario {
  std::string name;        // golden/<name>/...
  std::string file;        // path as given
  uint64_t file_hash = 0;  // XXH3-64 of the file's bytes
  std::string model = "builtin";
  // The target prompt, given exactly one way: `prompt` (text, encoded by the model's tokenizer as
  // transformers' tokenizer(text) does: the built-in byte model adds BOS), `messages` (a
  // conversation rendered by the checkpoint's chat template with `chat` options, then encoded), or
  // `prompt_tokens` (ids used as they are).
  std::string prompt;
  std::vector<ChatMessage> messages;
  ChatOptions chat;
  std::vector<int32_t> prompt_tokens;
  int samples = 1;
  int max_new_tokens = 128;
  bool stop_at_eos = true;
  SamplingParams sampling;
  EngineSettings engine;
  TrafficMix mix;
  uint64_t seed = 0;       // workload seed
  std::vector<Mode> modes{Mode::kDefault, Mode::kInvariant};
  std::string backend = "cpu";
  LiveSettings live;
  std::optional<TargetSettings> target;
  // Default mode must show divergence (more than one logit stream): when it does not, the harness
  // has lost its sight, and `golden check` fails and `golden update` refuses. A scenario too small
  // to diverge says false.
  bool expect_default_divergence = true;
};

absl::StatusOr<Scenario> load_scenario(const std::string& path);
// `file` names the source in messages; file_hash is computed from `text`.
absl::StatusOr<Scenario> parse_scenario(std::string_view text, const std::string& file);

EngineConfig engine_config(const Scenario& scenario, int num_threads, Mode mode);
std::string describe(const LengthDistribution& d);
std::string describe(const ArrivalProcess& a);

}  // namespace samebits
