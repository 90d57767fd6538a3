#include "harness/scenario/scenario.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/input_file.h"
#include "harness/golden/digest.h"
#include "harness/scenario/yaml_fields.h"

namespace samebits {
namespace {

bool safe_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '.') return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  }
  return true;
}

void read_length(YamlFields& parent, const std::string& key, LengthDistribution* out) {
  std::optional<YamlFields> f = parent.child(key);
  if (!f) return;
  std::string kind = "uniform";
  f->read_choice("dist", &kind, {"fixed", "uniform", "normal"});
  if (kind == "fixed") {
    int value = out->min;
    f->read_int("value", &value, 1, 65536, true);
    *out = {LengthDistribution::Kind::kFixed, value, value, double(value), 0};
  } else {
    LengthDistribution d = *out;
    d.kind = kind == "uniform" ? LengthDistribution::Kind::kUniform : LengthDistribution::Kind::kNormal;
    f->read_int("min", &d.min, 1, 65536, true);
    f->read_int("max", &d.max, 1, 65536, true);
    if (f->status().ok() && d.max < d.min)
      f->fail("max", absl::StrCat(d.max, " is less than min (", d.min, ")"));
    if (kind == "normal") {
      f->read_double("mean", &d.mean, 1, 65536, true);
      f->read_double("stddev", &d.stddev, 0, 65536, true);
    }
    *out = d;
  }
  parent.merge(f->finish());
}

void read_arrival(YamlFields& parent, ArrivalProcess* out) {
  std::optional<YamlFields> f = parent.child("arrival");
  if (!f) return;
  std::string kind = "poisson";
  f->read_choice("process", &kind, {"poisson", "uniform", "burst"});
  out->kind = kind == "poisson"   ? ArrivalProcess::Kind::kPoisson
              : kind == "uniform" ? ArrivalProcess::Kind::kUniform
                                  : ArrivalProcess::Kind::kBurst;
  // Poisson draws multiply uniforms until below exp(-rate): keep rate where that is well-conditioned.
  f->read_double("rate", &out->rate, 0.001, 64, true);
  if (out->kind == ArrivalProcess::Kind::kBurst) {
    f->read_int("burst_size", &out->burst_size, 1, 4096);
  } else if (f->has("burst_size")) {
    f->fail("burst_size", "only meaningful with process: burst");
  }
  parent.merge(f->finish());
}

// prompt | messages (+ chat) | prompt_tokens: exactly one.
void read_prompt(YamlFields& top, Scenario& s) {
  const int given = int(top.has("prompt")) + int(top.has("messages")) + int(top.has("prompt_tokens"));
  if (given != 1) {
    top.fail(given == 0 ? "prompt" : "messages",
             given == 0 ? "missing (give prompt, messages or prompt_tokens)"
                        : "give only one of prompt, messages and prompt_tokens");
    return;
  }
  top.read_string("prompt", &s.prompt);
  if (top.status().ok() && top.has("prompt") && s.prompt.empty()) top.fail("prompt", "'' is empty");
  top.read_int_list("prompt_tokens", &s.prompt_tokens, 0, INT32_MAX);
  for (YamlFields& m : top.child_list("messages")) {
    ChatMessage msg;
    m.read_choice("role", &msg.role, {"system", "user", "assistant"}, true);
    m.read_string("content", &msg.content, true);
    if (m.has("reasoning_content")) {
      std::string r;
      m.read_string("reasoning_content", &r);
      msg.reasoning_content = r;
    }
    top.merge(m.finish());
    s.messages.push_back(std::move(msg));
  }
  if (auto f = top.child("chat")) {
    if (!top.has("messages")) f->fail("add_generation_prompt", "chat options need messages");
    f->read_bool("add_generation_prompt", &s.chat.add_generation_prompt);
    if (f->has("enable_thinking")) {
      bool thinking = true;
      f->read_bool("enable_thinking", &thinking);
      s.chat.enable_thinking = thinking;
    }
    top.merge(f->finish());
  }
}

}  // namespace

absl::StatusOr<Scenario> parse_scenario(std::string_view text, const std::string& file) {
  auto loaded = load_yaml_document(text, file);
  if (!loaded.ok()) return loaded.status();
  const YAML::Node root = *loaded;
  Scenario s;
  s.file = file;
  s.file_hash = bytes_digest(text);
  YamlFields top(file, root, "");
  top.read_string("name", &s.name, true);
  if (top.status().ok() && !safe_name(s.name))
    top.fail("name", "'" + s.name + "' is not a plain name (letters, digits, _ - . only; it names golden/<name>/)");
  top.read_string("model", &s.model);
  if (top.status().ok() && s.model.empty()) top.fail("model", "'' is empty (use builtin)");
  read_prompt(top, s);
  top.read_int("samples", &s.samples, 1, 100000, true);
  top.read_int("max_new_tokens", &s.max_new_tokens, 1, 65536, true);
  top.read_bool("stop_at_eos", &s.stop_at_eos);
  int64_t seed = 0;
  top.read_int("seed", &seed, 0, INT64_MAX);
  s.seed = uint64_t(seed);

  if (auto f = top.child("sampling")) {
    f->read_float("temperature", &s.sampling.temperature, 0, kMaxTemperature);
    f->read_int("top_k", &s.sampling.top_k, 0, kMaxTopK);
    f->read_float("top_p", &s.sampling.top_p, kMinTopP, 1);
    int64_t sseed = 0;
    f->read_int("seed", &sseed, 0, INT64_MAX);
    s.sampling.seed = uint64_t(sseed);
    top.merge(f->finish());
  }
  if (auto f = top.child("engine")) {
    f->read_int("block_size", &s.engine.block_size, 1, 4096);
    f->read_int("kv_blocks", &s.engine.kv_blocks, 1, 1 << 24);
    f->read_int("max_tokens_per_step", &s.engine.max_tokens_per_step, 1, 1 << 20);
    f->read_int("max_seqs", &s.engine.max_seqs, 1, 1 << 16);
    f->read_int("max_chunk", &s.engine.max_chunk, 0, 1 << 20);
    f->read_bool("prefix_cache", &s.engine.prefix_cache);
    f->read_int("parallel_units", &s.engine.parallel_units, 1, 1 << 16);
    if (f->status().ok() && s.engine.max_chunk > s.engine.max_tokens_per_step) {
      f->fail("max_chunk", absl::StrCat(s.engine.max_chunk, " is larger than max_tokens_per_step (",
                                        s.engine.max_tokens_per_step, ")"));
    }
    top.merge(f->finish());
  }
  if (auto f = top.child("mix")) {
    f->read_int("background", &s.mix.background, 0, 1000000);
    read_length(*f, "prompt_len", &s.mix.prompt_len);
    read_length(*f, "output_len", &s.mix.output_len);
    read_arrival(*f, &s.mix.arrival);
    f->read_double("shared_prefix_fraction", &s.mix.shared_prefix_fraction, 0, 1);
    top.merge(f->finish());
  }
  if (auto f = top.child("live")) {
    f->read_int("clients", &s.live.clients, 1, 256);
    f->read_int("step_us", &s.live.step_us, 0, 10000000);
    top.merge(f->finish());
  }
  if (auto f = top.child("target")) {
    TargetSettings t;
    f->read_string("url", &t.url, true);
    if (f->status().ok() && t.url.rfind("http://", 0) != 0 && t.url.rfind("https://", 0) != 0)
      f->fail("url", "'" + t.url + "' does not start with http:// or https://");
    f->read_string("model", &t.model, true);
    f->read_choice("api", &t.api, {"completions", "chat"});
    f->read_string("api_key_env", &t.api_key_env);
    f->read_int("connections", &t.connections, 1, 1024);
    f->read_int("top_logprobs", &t.top_logprobs, 0, 20);
    f->read_bool("stream", &t.stream);
    f->read_int("timeout_s", &t.timeout_s, 1, 86400);
    f->read_choice("mode", &t.mode, {"default", "invariant"});
    s.target = t;
    top.merge(f->finish());
  }
  std::vector<std::string> modes;
  top.read_choice_list("modes", &modes, {"default", "invariant"});
  if (!modes.empty()) {
    s.modes.clear();
    for (const auto& m : modes) s.modes.push_back(*parse_mode(m));
  }
  top.read_choice("backend", &s.backend, {"cpu", "cuda"});
  top.read_bool("expect_default_divergence", &s.expect_default_divergence);
  if (absl::Status st = top.finish(); !st.ok()) return st;
  return s;
}

absl::StatusOr<Scenario> load_scenario(const std::string& path) {
  std::string text;
  if (absl::Status s = read_input_file(path, kMaxTextInputBytes, &text); !s.ok()) return s;
  return parse_scenario(text, path);
}

EngineConfig engine_config(const Scenario& scenario, int num_threads, Mode mode) {
  EngineConfig c;
  c.block_size = scenario.engine.block_size;
  c.num_blocks = scenario.engine.kv_blocks;
  c.max_tokens_per_step = scenario.engine.max_tokens_per_step;
  c.max_seqs = scenario.engine.max_seqs;
  c.max_chunk = scenario.engine.max_chunk;
  c.prefix_cache = scenario.engine.prefix_cache;
  c.exec.mode = mode;
  c.exec.parallel_units = scenario.engine.parallel_units;
  c.exec.num_threads = num_threads;
  return c;
}

std::string describe(const LengthDistribution& d) {
  switch (d.kind) {
    case LengthDistribution::Kind::kFixed: return absl::StrCat(d.min);
    case LengthDistribution::Kind::kUniform: return absl::StrCat("uniform[", d.min, ", ", d.max, "]");
    case LengthDistribution::Kind::kNormal:
      return absl::StrCat("normal(", d.mean, ", ", d.stddev, ") in [", d.min, ", ", d.max, "]");
  }
  return "?";
}

std::string describe(const ArrivalProcess& a) {
  switch (a.kind) {
    case ArrivalProcess::Kind::kPoisson: return absl::StrCat("poisson ", a.rate, "/step");
    case ArrivalProcess::Kind::kUniform: return absl::StrCat("uniform ", a.rate, "/step");
    case ArrivalProcess::Kind::kBurst:
      return absl::StrCat("bursts of ", a.burst_size, " at ", a.rate, "/step");
  }
  return "?";
}

}  // namespace samebits
