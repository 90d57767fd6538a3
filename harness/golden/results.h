// Results of one run, per mode: unique completions (by tokens) and unique logit streams (by chained
// digest); for every sample its first token divergence and first logit divergence against the
// main (most common) completion; the distribution of completions with their fork position and the
// text on both sides of the fork; wall time and throughput. Round-trips through JSON.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/golden/run_identity.h"
#include "common/output_files.h"
#include "kernels/mode.h"
#include "models/tiny_qwen/text_tokenizer.h"
#include "nlohmann/json.hpp"

namespace samebits {

// What the runner saw of one target sample.
struct TargetObservation {
  int sample = -1;
  std::vector<int32_t> tokens;
  std::vector<uint64_t> steps;  // step digests (token + logits)
  uint64_t digest = 0;          // chain over steps
  int prefix_hit_tokens = 0;
  int preemptions = 0;
  std::string finish;           // finish reason name
};

// Engine-level figures of one mode's run.
struct RunFigures {
  double wall_seconds = 0;
  int64_t engine_steps = 0;
  int64_t tokens_generated = 0;  // all requests
  int64_t tokens_computed = 0;   // prefill + decode through the model
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_hit_requests = 0;
  int64_t preemptions = 0;
  // Chain over every engine step's schedule (request ids, positions, token counts): the same
  // seeded workload scheduled differently gives default-mode bits that cannot be compared.
  uint64_t schedule_digest = 0;
  // Where the time went (seconds). Set-up: the model's weights and KV cache (before the run's
  // wall clock starts). In the run: wall time inside engine steps, of which host_wait_seconds
  // waiting for the device at host_waits points; the rest of a step is host time.
  double setup_weights_seconds = 0;
  int64_t setup_weights_bytes = 0;  // read from a checkpoint (0: synthetic weights, nothing read)
  double setup_kv_cache_seconds = 0;
  double step_seconds = 0;
  double host_wait_seconds = 0;
  int64_t host_waits = 0;
  double host_idle_device_seconds = 0;  // host time in steps before the first op issued, after the results
  int64_t overlapped_steps = 0;         // steps whose host work ran while the device computed them
  int64_t scheduled_ahead_steps = 0;    // steps enqueued while the step before them still computed
  int64_t discarded_rows = 0;           // rows of those steps whose request had just finished (invariant)
  // Host time by phase (EngineStats): scheduling + building batches, issuing them, booking tokens.
  double host_schedule_seconds = 0, host_issue_seconds = 0, host_book_seconds = 0;
  int64_t graph_replays = 0;   // steps replayed from recorded graphs
  int64_t graph_captures = 0;
  // Backend time per op kind (with --profile; GPU time on CUDA), in kind order; the kind
  // "(step span)" is the backend's time from each step's first op to its last.
  struct OpFigure {
    std::string kind;
    int64_t calls = 0;
    double seconds = 0;
    double host_seconds = 0;  // issuing the op on the host (equal to seconds on the CPU backend)
  };
  std::vector<OpFigure> op_times;
  // Host memory: resident before any model was built (the backend started), and the process's
  // peak at the end of this mode's run.
  int64_t host_rss_baseline_bytes = 0;
  int64_t host_peak_rss_bytes = 0;
};

struct CompletionGroup {  // one unique completion (by tokens)
  std::vector<int32_t> tokens;
  int count = 0;
  int logit_streams = 0;   // unique logit streams among its samples
  int first_sample = -1;
  int fork_position = -1;  // first token differing from the main completion; -1 for the main one
  std::string text;        // the whole completion through the model's tokenizer (display_text)
  std::string text_before, text_main, text_this;  // decoded text around the fork
};

struct LogitStream {  // one unique logit stream (by chained digest)
  uint64_t digest = 0;
  std::vector<uint64_t> steps;
  int count = 0;
  int completion = 0;  // index into groups
};

struct SampleSummary {
  int sample = -1;
  int completion = 0;  // index into groups
  int stream = 0;      // index into streams
  int first_token_divergence = -1;  // vs the main completion; -1 = none
  int first_logit_divergence = -1;  // vs the main logit stream; -1 = none
  int prefix_hit_tokens = 0;
  int preemptions = 0;
  std::string finish;
};

struct GoldenStatus {
  std::string state = "none";  // none | pass | mismatch | not comparable
  std::string detail;
};

struct ModeResult {
  Mode mode = Mode::kInvariant;
  int samples = 0;
  std::vector<CompletionGroup> groups;  // main first, then by count (desc), then first sample
  std::vector<LogitStream> streams;     // main first, then by count (desc), then first sample
  std::vector<SampleSummary> per_sample;
  int earliest_token_divergence = -1;
  int earliest_logit_divergence = -1;
  int samples_token_diverged = 0;
  int samples_logit_diverged = 0;
  RunFigures figures;
  GoldenStatus golden;

  int unique_completions() const { return int(groups.size()); }
  int unique_logit_streams() const { return int(streams.size()); }
  double tokens_per_second() const;
  std::string main_text() const { return groups.empty() ? "" : groups[0].text; }
};

struct RunResults {
  RunIdentity identity;  // scenario, model, backend and device, engine settings, samples
  std::vector<ModeResult> modes;

  const ModeResult* find(Mode m) const;
};

// Groups observations (in any order; sorted by sample here). Every observation needs steps and
// tokens of equal length. Texts come from the model's tokenizer.
ModeResult analyze_mode(Mode mode, std::vector<TargetObservation> observations, const RunFigures& figures,
                        const TextTokenizer& tokenizer);

// Text of tokens[begin, end) through the model's tokenizer for people: specials dropped, bytes
// that do not form a character (a cut inside one) as \xNN escapes, control bytes but \n as '?'.
std::string decode_text(const TextTokenizer& tokenizer, const std::vector<int32_t>& tokens, size_t begin, size_t end);

nlohmann::json results_to_json(const RunResults& results);
absl::StatusOr<RunResults> results_from_json(const nlohmann::json& json, const std::string& file);
absl::StatusOr<RunResults> read_results_file(const std::string& path);
// Writes the file atomically, or, given `outputs`, stages it there (written when they commit).
absl::Status write_results_file(const RunResults& results, const std::string& path, OutputFiles* outputs = nullptr);

// Two result files side by side (two servers, two modes, a server against the built-in engine):
// modes of the same name are paired, and when each file holds one mode those two are paired
// whatever their names. Per pair: both sides' counts, the first differing sample and its first
// differing token and step digest, and whether the main completions agree.
struct ComparisonLine {
  std::string mode;             // "default", or "default vs invariant" for a cross pair
  int samples_compared = 0;
  int samples_differing = 0;
  int first_sample = -1;      // first differing sample
  int first_token_step = -1;  // its first differing token
  int first_logit_step = -1;  // its first differing step digest
  int unique_completions_a = 0, unique_completions_b = 0;
  int unique_streams_a = 0, unique_streams_b = 0;
  int first_token_divergence_a = -1, first_token_divergence_b = -1;  // within each file
  bool main_completions_agree = false;  // same tokens (or, across tokenizers, the same text)
  std::string note;
};
std::vector<ComparisonLine> compare_results(const RunResults& a, const RunResults& b);

}  // namespace samebits
