// The identity of a run: which scenario, model, backend (down to the device and its libraries) and
// engine settings produced it. Results files, trace files and goldens all embed this one struct,
// written and read by the one JSON reader/writer below ("identity": {...}).
//
// What a golden depends on (incomparability()):
//   invariant mode — only what can change invariant bits: the target requests (scenario.target_hash:
//     prompt however given, max_new_tokens, stop_at_eos, sampling), the sample count, the model (weights digest),
//     the kernel set version and the backend architecture (backend.id, e.g. "cuda-sm90"). Background
//     traffic, engine settings, the device model, SM count, thread count and library versions cannot
//     change them (the invariance contract; the engine and kernel tests hold it).
//   default mode — the whole identity: the above plus the scenario file (traffic, seed, engine
//     settings), the engine settings themselves, the model spec, and the device: name, SM count,
//     CUDA runtime and cuBLASLt versions (another GPU model or a library upgrade may choose other
//     reductions: "not comparable", with the differing field named).
//   Never compared: names, paths and descriptions (for people), the thread count (bits do not depend
//   on it in either mode), and live (a live run's default mode is never comparable; see check_mode).
#pragma once
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "harness/golden/json_fields.h"
#include "harness/scenario/scenario.h"
#include "kernels/backend.h"
#include "kernels/mode.h"
#include "nlohmann/json.hpp"

namespace samebits {

struct ScenarioIdentity {
  std::string name;          // golden/<name>/...
  std::string file;          // path as given
  uint64_t file_hash = 0;    // XXH3-64 of the file's bytes
  uint64_t target_hash = 0;  // target_requests_hash(): what the target samples ask for
};

struct ModelIdentity {
  std::string spec;         // as the scenario or the command line gave it
  std::string description;  // for people
  uint64_t weights_digest = 0;
};

struct BackendIdentity {
  std::string name;         // for find_backend: cpu | cuda
  std::string id;           // architecture: cpu, cuda-sm90
  std::string description;  // for people
  BackendDevice device;     // empty on the CPU
  int kernel_set_version = 0;
};

struct RunIdentity {
  ScenarioIdentity scenario;
  ModelIdentity model;
  BackendIdentity backend;
  EngineSettings engine;
  int threads = 0;  // CPU threads (0 = OpenMP default)
  bool live = false;
  int samples = 0;
};

// XXH3 over the target requests' definition: prompt text, max_new_tokens, stop_at_eos, sampling
// (temperature, top_k, top_p, seed), then prompt_tokens and the chat messages with their options
// where the scenario gives the prompt that way, in a fixed little-endian layout.
uint64_t target_requests_hash(const Scenario& scenario);

// The identity of running `scenario` (overrides applied) with `samples` targets.
RunIdentity make_run_identity(const Scenario& scenario, const std::string& model_description,
                              uint64_t weights_digest, const Backend& backend, int samples, int threads, bool live);

// What a client-mode run knows of the server it examined (harness/client queries it).
struct ServedTarget {
  std::string model;           // the model id requests name
  std::string card;            // what the server reports about that model (for people)
  uint64_t model_digest = 0;   // samebits serve: its weights digest; other servers: XXH3 of the card
  std::string backend_id;      // http-<model> (client::target_backend_id)
  std::string description;     // API, URL and what the digests cover (for people)
  int kernel_set_version = 0;  // samebits serve's; 0 for other servers
};

// The identity of running `scenario` against a server: the server stands where the backend would
// ("http", its backend id); the scenario's engine settings shaped the traffic, the server's own
// settings are its business. Always live.
RunIdentity make_client_identity(const Scenario& scenario, const ServedTarget& target, int samples);

nlohmann::json identity_to_json(const RunIdentity& identity);
// Reads the "identity" object at `path` of `file` (for messages); one line naming file and field.
absl::StatusOr<RunIdentity> identity_from_json(const nlohmann::json& json, const std::string& file,
                                               const std::string& path);

// Reads the "identity" member of the object `fields` reads: results, traces and goldens embed the
// identity there. False, with fields' status set (one line naming file and field), when the member
// is missing or malformed.
bool read_identity_member(JsonFields& fields, RunIdentity* out);

// Why a golden recorded under `golden` cannot be compared with a run of `run` in `mode`: names the
// first differing field with both values ("" when comparable). See the header comment for which
// fields each mode depends on.
std::string incomparability(const RunIdentity& golden, const RunIdentity& run, Mode mode);

}  // namespace samebits
