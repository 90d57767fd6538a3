#include "harness/client/response_parse.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/input_file.h"
#include "harness/golden/digest.h"

namespace samebits::client {
namespace {

using nlohmann::json;

const json* member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

void set_token_string(TokenRecord* t, const std::string& token) {
  if (auto id = parse_token_id_placeholder(token)) {
    if (!t->id) t->id = id;
  } else {
    t->text = token;
  }
}

std::string top_key(const std::string& token) { return token; }

// Appends the tokens of one choice (or one chunk's choice) to `out`.
absl::Status read_choice(Api api, const json& choice, const std::string& where, ChoiceRecord* out) {
  if (!choice.is_object()) return absl::InvalidArgumentError(where + ": expected an object");
  const size_t first = out->tokens.size();
  if (api == Api::kCompletions) {
    if (const json* text = member(choice, "text"); text && text->is_string()) out->text += text->get<std::string>();
  } else {
    const json* msg = member(choice, "message");
    if (!msg) msg = member(choice, "delta");
    if (msg)
      if (const json* content = member(*msg, "content"); content && content->is_string()) out->text += content->get<std::string>();
  }
  if (const json* lp = member(choice, "logprobs")) {
    if (api == Api::kCompletions) {
      const json* tokens = member(*lp, "tokens");
      const json* lps = member(*lp, "token_logprobs");
      const json* tops = member(*lp, "top_logprobs");
      if (!tokens || !tokens->is_array()) return absl::InvalidArgumentError(where + ".logprobs.tokens: expected an array");
      for (size_t i = 0; i < tokens->size(); ++i) {
        TokenRecord t;
        if (!(*tokens)[i].is_string())
          return absl::InvalidArgumentError(absl::StrCat(where, ".logprobs.tokens[", i, "]: expected a string"));
        set_token_string(&t, (*tokens)[i].get<std::string>());
        if (lps && lps->is_array() && i < lps->size() && (*lps)[i].is_number()) t.logprob = (*lps)[i].get<double>();
        if (tops && tops->is_array() && i < tops->size() && (*tops)[i].is_object())
          for (auto it = (*tops)[i].begin(); it != (*tops)[i].end(); ++it)
            if (it.value().is_number()) t.top.emplace_back(top_key(it.key()), it.value().get<double>());
        out->tokens.push_back(std::move(t));
      }
    } else {
      const json* content = member(*lp, "content");
      if (content && !content->is_array()) return absl::InvalidArgumentError(where + ".logprobs.content: expected an array");
      for (size_t i = 0; content && i < content->size(); ++i) {
        const json& e = (*content)[i];
        const json* token = member(e, "token");
        if (!token || !token->is_string())
          return absl::InvalidArgumentError(absl::StrCat(where, ".logprobs.content[", i, "].token: expected a string"));
        TokenRecord t;
        set_token_string(&t, token->get<std::string>());
        if (const json* v = member(e, "logprob"); v && v->is_number()) t.logprob = v->get<double>();
        if (const json* tops = member(e, "top_logprobs"); tops && tops->is_array())
          for (const json& alt : *tops)
            if (const json* at = member(alt, "token"); at && at->is_string())
              if (const json* al = member(alt, "logprob"); al && al->is_number())
                t.top.emplace_back(top_key(at->get<std::string>()), al->get<double>());
        out->tokens.push_back(std::move(t));
      }
    }
  }
  // Token ids (samebits serve, vLLM's return_token_ids). They cover every generated token; where
  // logprobs are fewer (samebits cuts a matched stop sequence from text and logprobs), ids and
  // digests add the remaining tokens.
  if (const json* ids = member(choice, "token_ids"); ids && ids->is_array()) {
    const json* ext = member(choice, "samebits");
    const json* digests = ext ? member(*ext, "step_digests") : nullptr;
    if (digests && (!digests->is_array() || digests->size() != ids->size()))
      return absl::InvalidArgumentError(where + ".samebits.step_digests: not one per token id");
    for (size_t i = 0; i < ids->size(); ++i) {
      if (!(*ids)[i].is_number_integer() || (*ids)[i].get<int64_t>() < 0 || (*ids)[i].get<int64_t>() > INT32_MAX)
        return absl::InvalidArgumentError(
            absl::StrCat(where, ".token_ids[", i, "]: ", json_shown((*ids)[i]), " is not a token id (an integer in [0, 2^31))"));
      const size_t k = first + i;
      if (k >= out->tokens.size()) out->tokens.emplace_back();
      TokenRecord& t = out->tokens[k];
      t.id = (*ids)[i].get<int32_t>();
      if (digests) {
        auto d = (*digests)[i].is_string() ? parse_digest_hex((*digests)[i].get<std::string>()) : std::nullopt;
        if (!d) return absl::InvalidArgumentError(absl::StrCat(where, ".samebits.step_digests[", i, "]: not 16 hex digits"));
        t.step_digest = *d;
      }
    }
    if (ext)
      if (const json* d = member(*ext, "digest"); d && d->is_string()) out->digest = parse_digest_hex(d->get<std::string>());
  }
  // Alternatives in one canonical order (completions send them as a JSON object, whose key order
  // a reader may not keep): most likely first, then by token string.
  for (size_t k = first; k < out->tokens.size(); ++k)
    std::sort(out->tokens[k].top.begin(), out->tokens[k].top.end(),
              [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  if (const json* f = member(choice, "finish_reason"); f && f->is_string()) out->finish_reason = f->get<std::string>();
  return absl::OkStatus();
}

absl::Status error_of(const json& body) {
  const json* e = member(body, "error");
  if (!e) return absl::OkStatus();
  const json* msg = member(*e, "message");
  return absl::UnavailableError(absl::StrCat("the server answered with an error: ",
                                             msg && msg->is_string() ? msg->get<std::string>() : e->dump()));
}

}  // namespace

std::optional<int32_t> parse_token_id_placeholder(std::string_view token) {
  constexpr std::string_view kPrefix = "token_id:";
  if (token.substr(0, kPrefix.size()) != kPrefix || token.size() == kPrefix.size()) return std::nullopt;
  int32_t id = 0;
  const char* begin = token.data() + kPrefix.size();
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(begin, end, id);
  if (ec != std::errc() || ptr != end || id < 0) return std::nullopt;
  return id;
}

absl::StatusOr<ServerInfo> parse_model_list(std::string_view body_text, const std::string& model) {
  json body;
  if (absl::Status s = parse_json_text(body_text, "GET /models", &body); !s.ok()) return s;
  const json* data = member(body, "data");
  if (!data || !data->is_array()) return absl::InvalidArgumentError("GET /models: not an OpenAI model list (no data array)");
  for (const json& entry : *data) {
    const json* id = member(entry, "id");
    if (!id || *id != model) continue;
    json card = entry;
    card.erase("created");
    ServerInfo info;
    info.model_id = model;
    info.card = json_text(card);
    info.card_digest = bytes_digest(info.card);
    const json* ext = member(card, "samebits");
    if (!ext) return info;
    const std::string where = "GET /models: " + model + ": samebits.";
    auto bad = [&](const char* field, const json& v, const char* what) {
      return absl::InvalidArgumentError(absl::StrCat(where, field, ": ", json_shown(v), " is not ", what));
    };
    if (!ext->is_object()) return bad("", *ext, "an object");
    info.is_samebits = true;
    if (const json* d = member(*ext, "weights_digest")) {
      auto digest = d->is_string() ? parse_digest_hex(d->get<std::string>()) : std::nullopt;
      if (!digest) return bad("weights_digest", *d, "16 hex digits");
      info.weights_digest = *digest;
    }
    if (const json* v = member(*ext, "kernel_set_version")) {
      if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > INT_MAX)
        return bad("kernel_set_version", *v, "a non-negative integer");
      info.kernel_set_version = v->get<int>();
    }
    if (const json* v = member(*ext, "backend_id")) {
      if (!v->is_string()) return bad("backend_id", *v, "a string");
      info.backend_id = v->get<std::string>();
    }
    if (const json* v = member(*ext, "mode")) {
      info.mode = v->is_string() ? parse_mode(v->get<std::string>()) : std::nullopt;
      if (!info.mode) return bad("mode", *v, "invariant or default");
    }
    return info;
  }
  return absl::NotFoundError(absl::StrCat("'", printable(model), "' is not among the models served"));
}

absl::StatusOr<ChoiceRecord> parse_choice_body(Api api, std::string_view body_text) {
  json body;
  if (absl::Status s = parse_json_text(body_text, "the response body", &body); !s.ok()) return s;
  return parse_choice(api, body);
}

absl::StatusOr<ChoiceRecord> parse_choice(Api api, const json& body) {
  if (absl::Status s = error_of(body); !s.ok()) return s;
  const json* choices = member(body, "choices");
  if (!choices || !choices->is_array() || choices->empty())
    return absl::InvalidArgumentError("choices: expected a non-empty array");
  ChoiceRecord out;
  if (absl::Status s = read_choice(api, (*choices)[0], "choices[0]", &out); !s.ok()) return s;
  return out;
}

absl::Status StreamReader::feed(std::string_view bytes) {
  pending_.append(bytes.data(), bytes.size());
  // Events end with a blank line; lines may end in \n or \r\n.
  for (;;) {
    size_t end = pending_.find("\n\n");
    size_t crlf = pending_.find("\r\n\r\n");
    size_t cut = std::min(end, crlf);
    if (cut == std::string::npos) return absl::OkStatus();
    const size_t skip = cut == crlf ? 4 : 2;
    std::string block = pending_.substr(0, cut);
    pending_.erase(0, cut + skip);
    std::string data;
    size_t pos = 0;
    while (pos <= block.size()) {
      size_t nl = block.find('\n', pos);
      if (nl == std::string::npos) nl = block.size();
      std::string_view line(block.data() + pos, nl - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.substr(0, 5) == "data:") {
        line.remove_prefix(5);
        if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        if (!data.empty()) data += '\n';
        data.append(line);
      }
      pos = nl + 1;
    }
    if (!data.empty())
      if (absl::Status s = event(data); !s.ok()) return s;
  }
}

absl::Status StreamReader::event(std::string_view data) {
  ++events_;
  if (data == "[DONE]") {
    done_ = true;
    return absl::OkStatus();
  }
  json chunk;
  if (absl::Status s = parse_json_text(data, absl::StrCat("stream event ", events_), &chunk); !s.ok()) return s;
  if (absl::Status s = error_of(chunk); !s.ok()) return s;
  const json* choices = member(chunk, "choices");
  if (!choices) return absl::OkStatus();  // e.g. the usage chunk
  if (!choices->is_array()) return absl::InvalidArgumentError(absl::StrCat("stream event ", events_, ": choices: expected an array"));
  for (const json& c : *choices) {
    const json* index = member(c, "index");
    if (index && *index != 0) continue;
    if (absl::Status s = read_choice(api_, c, absl::StrCat("stream event ", events_, " choices[0]"), &choice_); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<ChoiceRecord> StreamReader::finish() const {
  if (!done_) return absl::InvalidArgumentError(absl::StrCat("the stream ended after ", events_, " events without data: [DONE]"));
  return choice_;
}

uint64_t returned_step_digest(const TokenRecord& t) {
  std::string bytes;
  auto put_le = [&](uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(char((v >> (8 * i)) & 0xff));
  };
  auto put_double = [&](std::optional<double> d) {
    uint64_t bits = 0x7ff8000000000000ull;
    if (d) std::memcpy(&bits, &*d, 8);
    put_le(bits, 8);
  };
  if (t.id) {
    bytes.push_back('i');
    put_le(uint32_t(*t.id), 4);
  } else {
    bytes.push_back('t');
    bytes += t.text.value_or("");
    bytes.push_back('\0');
  }
  put_double(t.logprob);
  for (const auto& [token, lp] : t.top) {
    bytes += token;
    bytes.push_back('\0');
    put_double(lp);
  }
  return bytes_digest(bytes);
}

}  // namespace samebits::client
