// Client mode: a scenario's workload (target samples + background traffic, arrival times, shared
// prefixes) sent to an OpenAI-compatible server over `connections` concurrent HTTP connections,
// and what comes back recorded per target token (token id or text, logprob, top alternatives,
// samebits' digest when offered). Arrival step k is sent at k * live.step_us after the start (or
// as soon as a connection is free). Prompts go as text (the workload's bytes after BOS), so every
// server tokenizes them itself; the chat API sends one user message.
#pragma once
#include <climits>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "harness/client/response_parse.h"
#include "harness/golden/results.h"
#include "harness/scenario/runner.h"
#include "harness/scenario/scenario.h"
#include "harness/scenario/workload.h"
#include "models/tiny_qwen/text_tokenizer.h"

namespace samebits::client {

// "http-" + the model name with every character outside [A-Za-z0-9._-] made '-'.
std::string target_backend_id(const std::string& model);

absl::StatusOr<ServerInfo> query_server(const TargetSettings& target);

// Token texts seen in responses (id, or interned text for text-only tokens -> text): the tokenizer
// the results of a client-mode run decode their texts with. It only decodes.
class TokenTexts : public TextTokenizer {
 public:
  // The id a text-only token is grouped by (interned; negative, so never a real id).
  int32_t intern(const std::string& text);
  void note(int32_t id, const std::string& text);

  absl::StatusOr<std::vector<int32_t>> encode_text(std::string_view, bool) const override {
    return absl::UnimplementedError("the texts of a server's tokens only decode");
  }
  std::string token_bytes(int32_t id) const override;
  bool is_special(int32_t) const override { return false; }
  int32_t byte_token(uint8_t byte) const override { return byte; }
  int32_t prompt_bos() const override { return -1; }
  int32_t vocab_size() const override { return INT32_MAX; }
  absl::StatusOr<ChatTemplate> chat_template() const override {
    return absl::UnimplementedError("the server applies its own chat template");
  }
  std::string description() const override { return "token texts as the server returned them"; }

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, int32_t> interned_;
  std::unordered_map<int32_t, std::string> text_;
};

struct ClientRunFigures {
  int64_t requests = 0, retries = 0;
  bool samebits_digests = false;  // every target token carried samebits' digest
};

// One run of the workload against the target; `mode` labels the result (the server's mode).
absl::StatusOr<ModeRun> run_against_target(const Scenario& scenario, const Workload& workload, Mode mode,
                                           TokenTexts* texts, ClientRunFigures* figures,
                                           const std::function<void(int, int)>& progress);

}  // namespace samebits::client
