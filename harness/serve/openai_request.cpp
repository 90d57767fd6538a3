#include "harness/serve/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/input_file.h"

namespace samebits::serve {
namespace {

using nlohmann::json;

ApiError invalid(std::string param, std::string message, std::string code = "") {
  return ApiError{400, "invalid_request_error", std::move(message), std::move(param), std::move(code)};
}

// A JSON value's type in words, for messages.
std::string type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

// Reads optional fields of the body; the first problem is kept and later reads are skipped.
class Fields {
 public:
  explicit Fields(const json& body) : body_(body) {}
  bool failed() const { return error_.has_value(); }
  const ApiError& error() const { return *error_; }
  void fail(ApiError e) {
    if (!error_) error_ = std::move(e);
  }
  const json* find(const char* key) const {
    auto it = body_.find(key);
    return it == body_.end() || it->is_null() ? nullptr : &*it;
  }
  void read_int(const char* key, int64_t* out, int64_t lo, int64_t hi) {
    const json* v = find(key);
    if (failed() || !v) return;
    if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() && std::fabs(v->get<double>()) < 1e15) {
      *out = int64_t(v->get<double>());  // 16.0 is an integer to Python-based servers too
    } else if (v->is_number_integer()) {
      *out = v->get<int64_t>();
    } else if (v->is_number_unsigned()) {
      *out = hi;  // beyond int64: out of range below
      if (hi < INT64_MAX) *out = hi + 1;
    } else {
      fail(invalid(key, absl::StrCat(key, ": expected an integer, got ", type_name(*v))));
      return;
    }
    if (*out < lo || *out > hi)
      fail(invalid(key, absl::StrCat(key, ": ", *out, " is outside [", lo, ", ", hi, "]")));
  }
  void read_number(const char* key, double* out, double lo, double hi, bool lo_open = false) {
    const json* v = find(key);
    if (failed() || !v) return;
    if (!v->is_number()) {
      fail(invalid(key, absl::StrCat(key, ": expected a number, got ", type_name(*v))));
      return;
    }
    *out = v->get<double>();
    if (!(std::isfinite(*out) && (lo_open ? *out > lo : *out >= lo) && *out <= hi))
      fail(invalid(key, absl::StrCat(key, ": ", *out, " is outside ", lo_open ? "(" : "[", lo, ", ", hi, "]")));
  }
  void read_bool(const char* key, bool* out) {
    const json* v = find(key);
    if (failed() || !v) return;
    if (!v->is_boolean()) {
      fail(invalid(key, absl::StrCat(key, ": expected a boolean, got ", type_name(*v))));
      return;
    }
    *out = v->get<bool>();
  }
  // Fields the engine cannot honour: accepted only with their neutral value.
  void refuse_unless_neutral(const char* key) {
    const json* v = find(key);
    if (failed() || !v) return;
    const bool neutral = (v->is_number() && v->get<double>() == 0) || (v->is_boolean() && !v->get<bool>()) ||
                         (v->is_object() && v->empty()) || (std::string(key) == "best_of" && *v == 1) ||
                         (v->is_string() && v->get<std::string>().empty());
    if (!neutral) fail(invalid(key, absl::StrCat(key, ": not supported by this server")));
  }

 private:
  const json& body_;
  std::optional<ApiError> error_;
};

bool is_token_list(const json& v) {
  return v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const json& t) { return t.is_number_integer(); });
}

void read_prompt(const json& body, const RequestLimits& limits, Fields& f, GenerationRequest* r) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) return f.fail(invalid("prompt", "prompt: required"));
  const json* p = &*it;
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  if (p->is_string()) {
    const std::string& text = p->get_ref<const std::string&>();
    if (text.empty()) return f.fail(invalid("prompt", "prompt: empty"));
    r->prompt.push_back(limits.bos_id);
    for (unsigned char c : text) r->prompt.push_back(c);
    return;
  }
  if (is_token_list(*p)) {
    for (const json& t : *p) {
      const int64_t id = t.get<int64_t>();
      if (id < 0 || id >= limits.vocab_size)
        return f.fail(invalid("prompt", absl::StrCat("prompt: token id ", id, " is outside the vocabulary [0, ", limits.vocab_size, ")")));
      r->prompt.push_back(int32_t(id));
    }
    return;
  }
  if (p->is_array() && p->size() > 1)
    return f.fail(invalid("prompt", "prompt: a batch of prompts is not supported; send one request per prompt (or use n)"));
  f.fail(invalid("prompt", absl::StrCat("prompt: expected a string or a list of token ids, got ", type_name(*p))));
}

void read_messages(const json& body, const RequestLimits& limits, Fields& f, GenerationRequest* r) {
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty())
    return f.fail(invalid("messages", "messages: required, a non-empty array"));
  std::vector<std::string> contents;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string where = absl::StrCat("messages[", i, "]");
    if (!m.is_object()) return f.fail(invalid(where, where + ": expected an object"));
    auto role = m.find("role");
    static const char* kRoles[] = {"system", "developer", "user", "assistant"};
    if (role == m.end() || !role->is_string() ||
        std::none_of(std::begin(kRoles), std::end(kRoles), [&](const char* k) { return *role == k; }))
      return f.fail(invalid(where + ".role", where + ".role: expected system, developer, user or assistant"));
    auto content = m.find("content");
    std::string text;
    if (content != m.end() && content->is_string()) {
      text = content->get<std::string>();
    } else if (content != m.end() && content->is_array()) {
      for (const json& part : *content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
          return f.fail(invalid(where + ".content", where + ".content: only text parts are supported"));
        text += part["text"].get<std::string>();
      }
    } else {
      return f.fail(invalid(where + ".content", where + ".content: expected a string or text parts"));
    }
    contents.push_back(std::move(text));
  }
  r->prompt = apply_chat_template(contents, limits.bos_id);
}

void read_stop(Fields& f, GenerationRequest* r, const RequestLimits& limits) {
  const json* v = f.find("stop");
  if (f.failed() || !v) return;
  if (v->is_string()) {
    r->stop.push_back(v->get<std::string>());
  } else if (v->is_array() && std::all_of(v->begin(), v->end(), [](const json& s) { return s.is_string(); })) {
    for (const json& s : *v) r->stop.push_back(s.get<std::string>());
  } else {
    return f.fail(invalid("stop", absl::StrCat("stop: expected a string or an array of strings, got ", type_name(*v))));
  }
  if (int(r->stop.size()) > limits.max_stop)
    return f.fail(invalid("stop", absl::StrCat("stop: ", r->stop.size(), " sequences, at most ", limits.max_stop)));
  for (const std::string& s : r->stop)
    if (s.empty()) return f.fail(invalid("stop", "stop: an empty stop sequence"));
}

}  // namespace

std::vector<int32_t> apply_chat_template(const std::vector<std::string>& contents, int32_t bos_id) {
  std::vector<int32_t> ids{bos_id};
  for (const std::string& text : contents) {
    for (unsigned char c : text) ids.push_back(c);
    if (text.empty() || text.back() != '\n') ids.push_back('\n');
  }
  return ids;
}

json error_json(const ApiError& e) {
  return {{"error",
           {{"message", e.message},
            {"type", e.type},
            {"param", e.param.empty() ? json(nullptr) : json(e.param)},
            {"code", e.code.empty() ? json(nullptr) : json(e.code)}}}};
}

ParsedRequest parse_generation_request(Api api, std::string_view text, const RequestLimits& limits) {
  // The shared reader of other people's JSON: syntax, nesting, repeated keys and numbers beyond
  // int64 / double are one error (its message shows positions, never the body's raw bytes).
  json body;
  if (absl::Status s = parse_json_text(text, "request body", &body); !s.ok())
    return invalid("", std::string(s.message()), "invalid_json");
  if (!body.is_object()) return invalid("", "the body must be a JSON object");

  GenerationRequest r;
  r.api = api;
  Fields f(body);
  const json* model = f.find("model");
  if (!model || !model->is_string()) return invalid("model", "model: required, a string");
  r.model = model->get<std::string>();
  if (std::find(limits.model_names.begin(), limits.model_names.end(), r.model) == limits.model_names.end())
    return ApiError{404, "invalid_request_error",
                    absl::StrCat("The model `", r.model, "` does not exist; this server serves ", absl::StrJoin(limits.model_names, ", ")),
                    "model", "model_not_found"};

  if (api == Api::kCompletions) {
    read_prompt(body, limits, f, &r);
    if (f.find("messages")) f.fail(invalid("messages", "messages: belongs to /v1/chat/completions"));
  } else {
    read_messages(body, limits, f, &r);
    if (f.find("prompt")) f.fail(invalid("prompt", "prompt: belongs to /v1/completions"));
  }
  if (f.failed()) return f.error();

  const int room = limits.max_model_len - int(r.prompt.size());
  if (room < 1)
    return invalid("prompt", absl::StrCat("This model's maximum context length is ", limits.max_model_len,
                                          " tokens. However, the prompt has ", r.prompt.size(), " tokens."),
                   "context_length_exceeded");
  int64_t max_tokens = api == Api::kCompletions ? 16 : room;
  const char* max_key = f.find("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  f.read_int(max_key, &max_tokens, 1, INT32_MAX);
  if (!f.failed() && max_tokens > room)
    return invalid(max_key, absl::StrCat("This model's maximum context length is ", limits.max_model_len,
                                         " tokens. However, you requested ", r.prompt.size() + size_t(max_tokens),
                                         " tokens (", r.prompt.size(), " in the prompt, ", max_tokens, " for the completion)."),
                   "context_length_exceeded");
  r.max_tokens = int(max_tokens);

  double temperature = 1.0, top_p = 1.0;  // OpenAI's defaults
  f.read_number("temperature", &temperature, 0, 2);
  f.read_number("top_p", &top_p, 0, 1, /*lo_open=*/true);
  r.sampling.temperature = float(temperature);
  r.sampling.top_p = float(top_p);
  int64_t top_k = 0, seed = 0, n = 1;
  f.read_int("top_k", &top_k, -1, 1 << 20);
  r.sampling.top_k = top_k < 0 ? 0 : int(top_k);  // -1 = off, as in vLLM and SGLang
  f.read_int("seed", &seed, INT64_MIN, INT64_MAX);
  r.sampling.seed = uint64_t(seed);
  f.read_int("n", &n, 1, limits.max_n);
  r.n = int(n);
  f.read_bool("stream", &r.stream);
  if (const json* so = f.find("stream_options"); so && !f.failed()) {
    if (!so->is_object()) f.fail(invalid("stream_options", "stream_options: expected an object"));
    else if (so->contains("include_usage") && !(*so)["include_usage"].is_boolean())
      f.fail(invalid("stream_options.include_usage", "stream_options.include_usage: expected a boolean"));
  }
  read_stop(f, &r, limits);
  f.read_bool("ignore_eos", &r.ignore_eos);
  f.read_bool("return_tokens_as_token_ids", &r.tokens_as_ids);
  if (api == Api::kCompletions) {
    int64_t lp = -1;
    f.read_int("logprobs", &lp, 0, limits.max_top_logprobs);
    r.logprobs = int(lp);
  } else {
    bool want = false;
    int64_t top = 0;
    f.read_bool("logprobs", &want);
    f.read_int("top_logprobs", &top, 0, limits.max_top_logprobs);
    if (!f.failed() && f.find("top_logprobs") && !want)
      f.fail(invalid("top_logprobs", "top_logprobs: needs logprobs: true"));
    r.logprobs = want ? int(top) : -1;
  }
  for (const char* key : {"presence_penalty", "frequency_penalty", "best_of", "echo", "logit_bias", "suffix"})
    f.refuse_unless_neutral(key);
  if (f.failed()) return f.error();
  return r;
}

}  // namespace samebits::serve
