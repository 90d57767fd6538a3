#include "harness/serve/openai_response.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "harness/golden/digest.h"
#include "models/tiny_qwen/tokenizer.h"

namespace samebits::serve {
namespace {

using nlohmann::json;

// The stop sequence the choice's tokens end with, or nullptr.
const std::string* matched_stop(const ChoiceState& c, const std::vector<std::string>& stop) {
  for (const std::string& s : stop) {
    if (s.size() > c.tokens.size()) continue;
    bool match = true;
    for (size_t i = 0; i < s.size() && match; ++i)
      match = c.tokens[c.tokens.size() - s.size() + i].id == int32_t(static_cast<unsigned char>(s[i]));
    if (match) return &s;
  }
  return nullptr;
}

std::string text_of(const ChoiceState& c, size_t from, size_t to) {
  std::string text;
  for (size_t i = from; i < to; ++i)
    if (c.tokens[i].id < kByteVocab) text.push_back(char(c.tokens[i].id));
  return text;
}

json bytes_of(int32_t id) { return id < kByteVocab ? json::array({id}) : json::array(); }

json completions_logprobs(const ChoiceState& c, size_t from, size_t to, int top, bool as_ids, size_t offset) {
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (size_t i = from; i < to; ++i) {
    const TokenOut& t = c.tokens[i];
    tokens.push_back(token_text(t.id, as_ids));
    lps.push_back(t.logprob);
    json alts = json::object();
    for (size_t k = 0; k < size_t(top) && k < t.top.size(); ++k) alts[token_text(t.top[k].first, as_ids)] = t.top[k].second;
    tops.push_back(std::move(alts));
    offsets.push_back(offset);
    offset += t.id < kByteVocab ? 1 : 0;
  }
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json chat_logprobs(const ChoiceState& c, size_t from, size_t to, int top, bool as_ids) {
  json content = json::array();
  for (size_t i = from; i < to; ++i) {
    const TokenOut& t = c.tokens[i];
    json alts = json::array();
    for (size_t k = 0; k < size_t(top) && k < t.top.size(); ++k)
      alts.push_back({{"token", token_text(t.top[k].first, as_ids)}, {"logprob", t.top[k].second}, {"bytes", bytes_of(t.top[k].first)}});
    content.push_back({{"token", token_text(t.id, as_ids)}, {"logprob", t.logprob}, {"bytes", bytes_of(t.id)}, {"top_logprobs", alts}});
  }
  return {{"content", content}};
}

json extension(const ChoiceState& c, size_t from, size_t to, json* token_ids) {
  json digests = json::array();
  *token_ids = json::array();
  for (size_t i = from; i < to; ++i) {
    token_ids->push_back(c.tokens[i].id);
    digests.push_back(digest_hex(c.tokens[i].step_digest));
  }
  json ext = {{"step_digests", digests}};
  if (c.done && to == c.tokens.size()) ext["digest"] = digest_hex(c.digest);
  return ext;
}

json choice_json(const Job& job, int index, size_t from, size_t visible_to, size_t to, const char* finish, bool delta) {
  const GenerationRequest& r = job.request;
  const ChoiceState& c = job.choices[size_t(index)];
  json choice = {{"index", index}};
  const std::string text = text_of(c, from, visible_to);
  if (r.api == Api::kCompletions) {
    choice["text"] = text;
    choice["logprobs"] = r.logprobs >= 0 ? completions_logprobs(c, from, visible_to, r.logprobs, r.tokens_as_ids,
                                                                text_of(c, 0, from).size())
                                         : json(nullptr);
  } else {
    json message = {{"content", text}};
    if (!delta || from == 0) message["role"] = "assistant";
    choice[delta ? "delta" : "message"] = message;
    choice["logprobs"] = r.logprobs >= 0 ? chat_logprobs(c, from, visible_to, r.logprobs, r.tokens_as_ids) : json(nullptr);
  }
  choice["finish_reason"] = finish ? json(finish) : json(nullptr);
  json ids;
  choice["samebits"] = extension(c, from, to, &ids);
  choice["token_ids"] = std::move(ids);
  return choice;
}

json envelope(const Job& job, const std::string& model, bool chunk) {
  const bool chat = job.request.api == Api::kChat;
  return {{"id", job.id},
          {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", job.created},
          {"model", model}};
}

}  // namespace

size_t visible_tokens(const ChoiceState& c, const std::vector<std::string>& stop) {
  if (c.done) {
    const std::string* s = c.reason == FinishReason::kStopSequence ? matched_stop(c, stop) : nullptr;
    return c.tokens.size() - (s ? s->size() : 0);
  }
  // A stop sequence is known to match only when the engine finishes the choice, after its last
  // token is already in the list: hold back as many tokens as the longest stop sequence.
  size_t hold = 0;
  for (const std::string& s : stop) hold = std::max(hold, s.size());
  return c.tokens.size() > hold ? c.tokens.size() - hold : 0;
}

const char* finish_reason_text(FinishReason reason) {
  switch (reason) {
    case FinishReason::kEos:
    case FinishReason::kStopSequence: return "stop";
    case FinishReason::kMaxTokens: return "length";
    case FinishReason::kCancelled: return "abort";
    case FinishReason::kRejected: return "error";
    case FinishReason::kRunning: return nullptr;
  }
  return nullptr;
}

std::string token_text(int32_t id, bool as_ids) {
  if (as_ids) return absl::StrCat("token_id:", id);
  return id < kByteVocab ? std::string(1, char(id)) : std::string();
}

json usage_json(const Job& job) {
  int64_t completion = 0;
  for (const ChoiceState& c : job.choices) completion += int64_t(c.tokens.size());
  const int64_t prompt = int64_t(job.request.prompt.size());
  return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
}

json response_json(const Job& job, const std::string& model) {
  json body = envelope(job, model, false);
  json choices = json::array();
  for (int i = 0; i < int(job.choices.size()); ++i) {
    const ChoiceState& c = job.choices[size_t(i)];
    choices.push_back(choice_json(job, i, 0, visible_tokens(c, job.request.stop), c.tokens.size(),
                                  finish_reason_text(c.reason), false));
  }
  body["choices"] = std::move(choices);
  body["usage"] = usage_json(job);
  body["prompt_token_ids"] = job.request.prompt;
  return body;
}

json chunk_json(const Job& job, const std::string& model, int index, size_t from, size_t visible_to, size_t to,
                const char* finish_reason) {
  json body = envelope(job, model, true);
  body["choices"] = json::array({choice_json(job, index, from, visible_to, to, finish_reason, true)});
  return body;
}

std::string dump(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace samebits::serve
