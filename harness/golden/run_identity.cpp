#include "harness/golden/run_identity.h"

#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "harness/golden/digest.h"
#include "harness/golden/json_fields.h"

namespace samebits {

using nlohmann::json;

namespace {

template <typename T>
void append_le(std::string* out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // every supported host is little-endian (digest.h)
  out->append(bytes, sizeof(T));
}

}  // namespace

uint64_t target_requests_hash(const Scenario& sc) {
  std::string bytes;
  append_le<uint64_t>(&bytes, sc.prompt.size());
  bytes += sc.prompt;
  append_le<int32_t>(&bytes, sc.max_new_tokens);
  append_le<uint8_t>(&bytes, sc.stop_at_eos ? 1 : 0);
  append_le<float>(&bytes, sc.sampling.temperature);
  append_le<int32_t>(&bytes, sc.sampling.top_k);
  append_le<float>(&bytes, sc.sampling.top_p);
  append_le<uint64_t>(&bytes, sc.sampling.seed);
  // The other two ways of giving the prompt, appended only when used, so that the hash of a scenario
  // with a text prompt is what it always was (goldens recorded before stay comparable).
  if (!sc.prompt_tokens.empty()) {
    bytes += "prompt_tokens";
    append_le<uint64_t>(&bytes, sc.prompt_tokens.size());
    for (int32_t t : sc.prompt_tokens) append_le<int32_t>(&bytes, t);
  }
  if (!sc.messages.empty()) {
    bytes += "messages";
    append_le<uint64_t>(&bytes, sc.messages.size());
    auto text = [&](const std::string& s) {
      append_le<uint64_t>(&bytes, s.size());
      bytes += s;
    };
    for (const ChatMessage& m : sc.messages) {
      text(m.role);
      text(m.content);
      append_le<uint8_t>(&bytes, m.reasoning_content.has_value() ? 1 : 0);
      if (m.reasoning_content) text(*m.reasoning_content);
    }
    append_le<uint8_t>(&bytes, sc.chat.add_generation_prompt ? 1 : 0);
    append_le<uint8_t>(&bytes, !sc.chat.enable_thinking.has_value() ? 2 : *sc.chat.enable_thinking ? 1 : 0);
  }
  return bytes_digest(bytes);
}

RunIdentity make_run_identity(const Scenario& sc, const std::string& model_description, uint64_t weights_digest,
                              const Backend& backend, int samples, int threads, bool live) {
  RunIdentity id;
  id.scenario = {sc.name, sc.file, sc.file_hash, target_requests_hash(sc)};
  id.model = {sc.model, model_description, weights_digest};
  id.backend = {sc.backend, backend.id, backend.description, backend.device, kKernelSetVersion};
  id.engine = sc.engine;
  id.threads = threads;
  id.live = live;
  id.samples = samples;
  return id;
}

RunIdentity make_client_identity(const Scenario& sc, const ServedTarget& target, int samples) {
  RunIdentity id;
  id.scenario = {sc.name, sc.file, sc.file_hash, target_requests_hash(sc)};
  id.model = {target.model, target.card, target.model_digest};
  id.backend = {"http", target.backend_id, target.description, BackendDevice{}, target.kernel_set_version};
  id.engine = sc.engine;
  id.live = true;
  id.samples = samples;
  return id;
}

json identity_to_json(const RunIdentity& id) {
  const EngineSettings& e = id.engine;
  const BackendDevice& d = id.backend.device;
  return {
      {"scenario", {{"name", id.scenario.name}, {"file", id.scenario.file},
                    {"file_hash", digest_hex(id.scenario.file_hash)}, {"target_hash", digest_hex(id.scenario.target_hash)}}},
      {"model", {{"spec", id.model.spec}, {"description", id.model.description},
                 {"weights_digest", digest_hex(id.model.weights_digest)}}},
      {"backend", {{"name", id.backend.name}, {"id", id.backend.id}, {"description", id.backend.description},
                   {"device", {{"name", d.name}, {"sm_count", d.sm_count}, {"cuda_runtime", d.cuda_runtime},
                               {"cublaslt", d.cublaslt}}},
                   {"kernel_set_version", id.backend.kernel_set_version}}},
      {"engine", {{"block_size", e.block_size}, {"kv_blocks", e.kv_blocks},
                  {"max_tokens_per_step", e.max_tokens_per_step}, {"max_seqs", e.max_seqs},
                  {"max_chunk", e.max_chunk}, {"prefix_cache", e.prefix_cache},
                  {"parallel_units", e.parallel_units}, {"threads", id.threads}, {"live", id.live}}},
      {"samples", id.samples},
  };
}

absl::StatusOr<RunIdentity> identity_from_json(const json& j, const std::string& file, const std::string& path) {
  JsonFields f(file, &j, path);
  RunIdentity id;
  if (const json* s = f.object("scenario")) {
    JsonFields sf(file, s, f.field("scenario"));
    sf.get("name", &id.scenario.name);
    sf.get("file", &id.scenario.file);
    sf.get_digest("file_hash", &id.scenario.file_hash);
    sf.get_digest("target_hash", &id.scenario.target_hash);
    f.merge(sf.status());
  }
  if (const json* m = f.object("model")) {
    JsonFields mf(file, m, f.field("model"));
    mf.get("spec", &id.model.spec);
    mf.get("description", &id.model.description);
    mf.get_digest("weights_digest", &id.model.weights_digest);
    f.merge(mf.status());
  }
  if (const json* b = f.object("backend")) {
    JsonFields bf(file, b, f.field("backend"));
    bf.get("name", &id.backend.name);
    bf.get("id", &id.backend.id);
    bf.get("description", &id.backend.description);
    if (const json* d = bf.object("device")) {
      JsonFields df(file, d, bf.field("device"));
      df.get("name", &id.backend.device.name);
      df.get("sm_count", &id.backend.device.sm_count);
      df.get("cuda_runtime", &id.backend.device.cuda_runtime);
      df.get("cublaslt", &id.backend.device.cublaslt);
      bf.merge(df.status());
    }
    bf.get("kernel_set_version", &id.backend.kernel_set_version);
    f.merge(bf.status());
  }
  if (const json* e = f.object("engine")) {
    JsonFields ef(file, e, f.field("engine"));
    // The same bounds as a scenario's engine block and the command line's thread count.
    ef.get("block_size", &id.engine.block_size, 1, 4096);
    ef.get("kv_blocks", &id.engine.kv_blocks, 1, 1 << 24);
    ef.get("max_tokens_per_step", &id.engine.max_tokens_per_step, 1, 1 << 20);
    ef.get("max_seqs", &id.engine.max_seqs, 1, 1 << 16);
    ef.get("max_chunk", &id.engine.max_chunk, 0, 1 << 20);
    ef.get("prefix_cache", &id.engine.prefix_cache);
    ef.get("parallel_units", &id.engine.parallel_units, 1, 1 << 16);
    ef.get("threads", &id.threads, 0, 1024);
    ef.get("live", &id.live);
    f.merge(ef.status());
  }
  f.get("samples", &id.samples, 1, 100000);
  if (!f.status().ok()) return f.status();
  return id;
}

bool read_identity_member(JsonFields& f, RunIdentity* out) {
  const json* id = f.object("identity");
  if (id == nullptr || !f.status().ok()) return false;
  auto identity = identity_from_json(*id, f.file(), f.field("identity"));
  if (!identity.ok()) {
    f.merge(identity.status());
    return false;
  }
  *out = std::move(*identity);
  return true;
}

namespace {

template <typename T>
std::string text_of(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    return "'" + v + "'";
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else {
    return absl::StrCat(v);
  }
}

class Differ {
 public:
  template <typename T>
  void field(const char* name, const T& golden, const T& run) {
    if (!first_.empty() || golden == run) return;
    first_ = absl::StrCat(name, " differs (golden ", text_of(golden), ", run ", text_of(run), ")");
  }
  void digest(const char* name, uint64_t golden, uint64_t run) {
    if (!first_.empty() || golden == run) return;
    first_ = absl::StrCat(name, " differs (golden ", digest_hex(golden), ", run ", digest_hex(run), ")");
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

}  // namespace

std::string incomparability(const RunIdentity& g, const RunIdentity& r, Mode mode) {
  Differ d;
  // What can change invariant bits.
  d.field("backend.id", g.backend.id, r.backend.id);
  d.field("backend.kernel_set_version", g.backend.kernel_set_version, r.backend.kernel_set_version);
  d.digest("model.weights_digest", g.model.weights_digest, r.model.weights_digest);
  d.digest("scenario.target_hash", g.scenario.target_hash, r.scenario.target_hash);
  d.field("samples", g.samples, r.samples);
  if (mode == Mode::kInvariant) return d.first();
  // Default mode: the whole identity.
  d.field("backend.device.name", g.backend.device.name, r.backend.device.name);
  d.field("backend.device.sm_count", g.backend.device.sm_count, r.backend.device.sm_count);
  d.field("backend.device.cuda_runtime", g.backend.device.cuda_runtime, r.backend.device.cuda_runtime);
  d.field("backend.device.cublaslt", g.backend.device.cublaslt, r.backend.device.cublaslt);
  d.field("model.spec", g.model.spec, r.model.spec);
  d.digest("scenario.file_hash", g.scenario.file_hash, r.scenario.file_hash);
  const EngineSettings &ge = g.engine, &re = r.engine;
  d.field("engine.block_size", ge.block_size, re.block_size);
  d.field("engine.kv_blocks", ge.kv_blocks, re.kv_blocks);
  d.field("engine.max_tokens_per_step", ge.max_tokens_per_step, re.max_tokens_per_step);
  d.field("engine.max_seqs", ge.max_seqs, re.max_seqs);
  d.field("engine.max_chunk", ge.max_chunk, re.max_chunk);
  d.field("engine.prefix_cache", ge.prefix_cache, re.prefix_cache);
  d.field("engine.parallel_units", ge.parallel_units, re.parallel_units);
  return d.first();
}

}  // namespace samebits
