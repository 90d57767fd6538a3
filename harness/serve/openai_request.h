// OpenAI-compatible request parsing for `samebits serve`, as one pure function: body bytes and
// limits in, a generation request or an OpenAI error object (with its HTTP status) out. No I/O and
// no engine, so it can be tested and fuzzed on its own.
//
// Accepted, as the OpenAI API defines them: model, prompt (string, token ids, or a list holding one
// of those), messages (chat), max_tokens / max_completion_tokens, temperature, top_p, seed, n, stop,
// stream, stream_options.include_usage, logprobs (completions: top-N integer; chat: bool plus
// top_logprobs), user; extensions as vLLM and SGLang name them: top_k, ignore_eos,
// return_tokens_as_token_ids. Fields the engine cannot honour with a non-default value
// (presence/frequency penalties, best_of, echo, logit_bias, suffix) are refused with 400 rather
// than ignored. Unknown fields are ignored, as the reference servers do.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "harness/engine/engine.h"
#include "nlohmann/json.hpp"

namespace samebits::serve {

enum class Api { kCompletions, kChat };

struct RequestLimits {
  std::vector<std::string> model_names;  // names a request may give as `model`
  int vocab_size = 258;
  int bos_id = 256;
  int max_model_len = 1024;  // prompt + max_tokens at most (context and KV capacity)
  int max_n = 8;
  int max_top_logprobs = 20;
  int max_stop = 4;
};

struct GenerationRequest {
  Api api = Api::kCompletions;
  std::string model;
  std::vector<int32_t> prompt;  // token ids given to the engine (BOS first for text prompts)
  int max_tokens = 16;
  SamplingParams sampling;      // seed is choice 0's; choice i uses seed + i
  int n = 1;
  bool stream = false;
  bool include_usage = true;    // usage is always sent; kept for streamed responses' last chunk
  std::vector<std::string> stop;
  int logprobs = -1;            // -1: no logprobs; else how many top alternatives per token
  bool ignore_eos = false;
  bool tokens_as_ids = false;   // vLLM's "token_id:N" token strings in logprobs
};

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;  // the offending field, "" when none
  std::string code;   // e.g. "model_not_found", "context_length_exceeded"
};

using ParsedRequest = std::variant<GenerationRequest, ApiError>;

ParsedRequest parse_generation_request(Api api, std::string_view body, const RequestLimits& limits);

// {"error": {"message", "type", "param", "code"}} (null for empty param/code), as OpenAI sends it.
nlohmann::json error_json(const ApiError& error);

// The chat template of the built-in checkpoint: BOS, then each message's text followed by one '\n'
// (none added when it already ends in one); roles are not marked, as the checkpoint never saw them.
std::vector<int32_t> apply_chat_template(const std::vector<std::string>& contents, int32_t bos_id);

}  // namespace samebits::serve
