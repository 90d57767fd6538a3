// Reading what an OpenAI-compatible server returns, per generated token, without trusting any one
// server's extras: pure functions over response bodies (JSON) and server-sent-event streams.
//
// Per token, in order of preference:
//   id:      samebits' / vLLM's `token_ids` (vLLM: return_token_ids, v0.10.2 on), else vLLM's
//            "token_id:N" token strings (--return-tokens-as-token-ids), else none (SGLang's OpenAI
//            endpoints give token text only);
//   text:    the logprobs token string when it is not a "token_id:N" placeholder;
//   logprob: the chosen token's logprob, and the top alternatives as (token string, logprob);
//   digest:  samebits serve's step digest (XXH3 over token id + fp32 logits) when every token has one.
// Completions logprobs: {tokens, token_logprobs, top_logprobs: [{token: lp}], text_offset}; chat
// logprobs: {content: [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/mode.h"
#include "nlohmann/json.hpp"

namespace samebits::client {

enum class Api { kCompletions, kChat };

struct TokenRecord {
  std::optional<int32_t> id;
  std::optional<std::string> text;
  std::optional<double> logprob;
  std::vector<std::pair<std::string, double>> top;  // most likely first, ties by token string
  std::optional<uint64_t> step_digest;              // samebits serve only
};

struct ChoiceRecord {
  std::string text;           // the completion's text as returned
  std::vector<TokenRecord> tokens;
  std::string finish_reason;  // "" when none was given
  std::optional<uint64_t> digest;  // samebits serve's chained digest, when given
};

// What the server says about itself (GET <url>/models), and what the run depends on.
struct ServerInfo {
  std::string model_id;
  std::string card;              // the model's entry, as JSON text without its "created" time
  uint64_t card_digest = 0;      // XXH3 of `card`
  bool is_samebits = false;      // the card carries samebits' extension
  uint64_t weights_digest = 0;   // samebits: the served weights' digest
  int kernel_set_version = 0;    // samebits: the server's kernel set
  std::string backend_id;        // samebits: the server's backend id
  std::optional<Mode> mode;      // samebits: the mode it runs in
};

// The entry of `model` in a GET /models body (an OpenAI model list), samebits' extension read when
// present. Errors name the field; every field is checked for its type and range.
absl::StatusOr<ServerInfo> parse_model_list(std::string_view body, const std::string& model);

// "token_id:N" -> N.
std::optional<int32_t> parse_token_id_placeholder(std::string_view token);

// Choice 0 of a non-streamed completion or chat completion body. Errors name the field.
absl::StatusOr<ChoiceRecord> parse_choice(Api api, const nlohmann::json& body);
// The same from the body's bytes (read as every JSON input: bounded nesting, numbers in range).
absl::StatusOr<ChoiceRecord> parse_choice_body(Api api, std::string_view body);

// Accumulates a streamed response: feed() the raw bytes as they arrive (any split); each complete
// `data:` event is a chunk whose choice-0 delta is appended; `data: [DONE]` ends it. An error
// object inside the stream is an error.
class StreamReader {
 public:
  explicit StreamReader(Api api) : api_(api) {}
  absl::Status feed(std::string_view bytes);
  bool done() const { return done_; }
  // The assembled choice; an error when the stream did not end with [DONE].
  absl::StatusOr<ChoiceRecord> finish() const;
  int events() const { return events_; }

 private:
  absl::Status event(std::string_view data);
  Api api_;
  std::string pending_;
  ChoiceRecord choice_;
  bool done_ = false;
  int events_ = 0;
};

// What a client-mode step digest covers when the server offers no samebits digest: XXH3-64 over
// the token (id as int32 LE, or the text's bytes when there is no id), the chosen logprob (fp64
// bits, LE; NaN bits when absent), and each top alternative (text bytes, 0 byte, logprob fp64 LE).
uint64_t returned_step_digest(const TokenRecord& token);

}  // namespace samebits::client
