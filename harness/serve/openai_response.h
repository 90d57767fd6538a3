// OpenAI-compatible response bodies for `samebits serve`, built from a job's state: completion and
// chat completion objects, their streamed chunks, logprobs in each API's shape, usage. Every
// choice also carries the engine's truth in extension fields: `token_ids` (every generated token,
// a matched stop sequence included, as vLLM's return_token_ids gives them) and
// `samebits: {step_digests, digest}` (XXH3 over token id + fp32 logits per token, and their
// chain), so a client can check bits without trusting rounded logprobs.
#pragma once
#include <string>
#include <vector>

#include "harness/serve/service.h"
#include "nlohmann/json.hpp"

namespace samebits::serve {

// Tokens of a choice that are shown as text and logprobs: a matched stop sequence is cut (as
// OpenAI does), and while the choice runs, as many of the last tokens as the longest stop
// sequence has are held back (they may turn out to be one).
size_t visible_tokens(const ChoiceState& choice, const std::vector<std::string>& stop);
const char* finish_reason_text(FinishReason reason);
// A token's text: its byte, "" for special tokens, or "token_id:N" (vLLM's
// --return-tokens-as-token-ids form) when as_ids.
std::string token_text(int32_t id, bool as_ids);

// The whole response of a finished job (caller holds job.mu).
nlohmann::json response_json(const Job& job, const std::string& model);
// One streamed chunk for choice `index`: tokens [from, to) of which [from, visible_to) are shown
// as text and logprobs; finish_reason when the choice ends with it.
nlohmann::json chunk_json(const Job& job, const std::string& model, int index, size_t from, size_t visible_to,
                          size_t to, const char* finish_reason);
nlohmann::json usage_json(const Job& job);
// JSON text of a body; bytes that are not UTF-8 (a lone byte token) become U+FFFD.
std::string dump(const nlohmann::json& body);

}  // namespace samebits::serve
