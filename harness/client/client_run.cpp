#include "harness/client/client_run.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/input_file.h"
#include "harness/client/response_parse.h"
#include "harness/golden/digest.h"
#include "httplib.h"
#include "models/tiny_qwen/tokenizer.h"

namespace samebits::client {
namespace {

using nlohmann::json;

struct Endpoint {
  std::string origin;  // scheme://host:port
  std::string prefix;  // path before /completions, e.g. /v1
};

Endpoint split_url(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  Endpoint e;
  e.origin = url.substr(0, path);
  e.prefix = path == std::string::npos ? "" : url.substr(path);
  while (!e.prefix.empty() && e.prefix.back() == '/') e.prefix.pop_back();
  return e;
}

absl::StatusOr<httplib::Headers> auth_headers(const TargetSettings& t) {
  httplib::Headers h;
  if (t.api_key_env.empty()) return h;
  const char* key = std::getenv(t.api_key_env.c_str());
  if (!key || !*key)
    return absl::InvalidArgumentError(absl::StrCat("target.api_key_env: the environment variable ", t.api_key_env, " is not set"));
  h.emplace("Authorization", absl::StrCat("Bearer ", key));
  return h;
}

std::unique_ptr<httplib::Client> connect(const TargetSettings& t, const Endpoint& e) {
  auto c = std::make_unique<httplib::Client>(e.origin);
  c->set_keep_alive(true);
  c->set_connection_timeout(10);
  c->set_read_timeout(t.timeout_s);
  c->set_write_timeout(t.timeout_s);
  return c;
}

std::string prompt_text(const std::vector<int32_t>& prompt) {
  std::string text;
  for (int32_t id : prompt)
    if (id < kByteVocab) text.push_back(char(id));
  return text;
}

json request_body(const Scenario& sc, const Arrival& a, bool target) {
  const TargetSettings& t = *sc.target;
  const std::string text = prompt_text(a.spec.prompt);
  json body = {{"model", t.model}, {"max_tokens", a.spec.max_new_tokens}, {"temperature", a.spec.sampling.temperature},
               {"top_p", a.spec.sampling.top_p}, {"seed", a.spec.sampling.seed}, {"stream", t.stream}};
  if (t.api == "chat") body["messages"] = json::array({{{"role", "user"}, {"content", text}}});
  else body["prompt"] = text;
  if (a.spec.sampling.top_k > 0) body["top_k"] = a.spec.sampling.top_k;
  if (!a.spec.stop_at_eos) body["ignore_eos"] = true;
  if (target) {
    // Token ids where the server offers them (samebits serve, vLLM >= 0.10.2; others ignore it).
    body["return_token_ids"] = true;
    if (t.api == "chat") {
      body["logprobs"] = true;
      body["top_logprobs"] = t.top_logprobs;
    } else {
      body["logprobs"] = t.top_logprobs;
    }
  }
  if (t.stream) body["stream_options"] = {{"include_usage", true}};
  return body;
}

}  // namespace

std::string target_backend_id(const std::string& model) {
  std::string id = "http-" + model;
  for (char& c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '-';
  return id;
}

int32_t TokenTexts::intern(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = interned_.emplace(text, -1 - int32_t(interned_.size()));
  if (added) text_[it->second] = text;
  return it->second;
}

void TokenTexts::note(int32_t id, const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  text_.emplace(id, text);
}

std::string TokenTexts::token_bytes(int32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = text_.find(id);
  return it != text_.end() ? it->second : absl::StrCat("<", id, ">");
}

absl::StatusOr<ServerInfo> query_server(const TargetSettings& t) {
  const Endpoint e = split_url(t.url);
  auto headers = auth_headers(t);
  if (!headers.ok()) return headers.status();
  auto c = connect(t, e);
  auto res = c->Get(e.prefix + "/models", *headers);
  if (!res)
    return absl::UnavailableError(absl::StrCat("target.url: ", t.url, ": cannot reach the server (", httplib::to_string(res.error()), ")"));
  if (res->status != 200)
    return absl::UnavailableError(absl::StrCat("target.url: GET ", t.url, "/models answered HTTP ", res->status));
  auto info = parse_model_list(res->body, t.model);
  if (info.ok()) return info;
  if (absl::IsNotFound(info.status()))
    return absl::InvalidArgumentError(absl::StrCat("target.model: '", t.model, "' is not among the models ", t.url, " serves"));
  return absl::InvalidArgumentError(absl::StrCat("target.url: ", t.url, ": ", info.status().message()));
}

absl::StatusOr<ModeRun> run_against_target(const Scenario& sc, const Workload& workload, Mode mode, TokenTexts* texts,
                                           ClientRunFigures* figures, const std::function<void(int, int)>& progress) {
  const TargetSettings& t = *sc.target;
  const Endpoint endpoint = split_url(t.url);
  const Api api = t.api == "chat" ? Api::kChat : Api::kCompletions;
  const std::string path = endpoint.prefix + (api == Api::kChat ? "/chat/completions" : "/completions");
  auto headers = auth_headers(t);
  if (!headers.ok()) return headers.status();

  ModeRun out;
  out.mode = mode;
  out.targets.resize(size_t(workload.samples));
  std::vector<ChoiceRecord> records(size_t(workload.samples));
  std::atomic<size_t> next{0};
  std::atomic<int> targets_done{0};
  std::atomic<int64_t> tokens{0}, retries{0};
  std::mutex error_mu;
  std::string first_error;
  auto fail = [&](std::string message) {
    std::lock_guard<std::mutex> lock(error_mu);
    if (first_error.empty()) first_error = std::move(message);
  };
  auto failed = [&] {
    std::lock_guard<std::mutex> lock(error_mu);
    return !first_error.empty();
  };

  const auto start = std::chrono::steady_clock::now();
  auto worker = [&] {
    auto client = connect(t, endpoint);
    for (size_t i = next++; i < workload.arrivals.size() && !failed(); i = next++) {
      const Arrival& a = workload.arrivals[i];
      std::this_thread::sleep_until(start + std::chrono::microseconds(a.step * int64_t(sc.live.step_us)));
      const bool is_target = a.sample >= 0;
      const std::string body = request_body(sc, a, is_target).dump();
      for (int attempt = 0;; ++attempt) {
        StreamReader stream(api);
        absl::Status stream_status;
        httplib::Result res = client->Post(path, *headers, body, "application/json");
        if (t.stream && res && res->status == 200) stream_status = stream.feed(res->body);
        if (!res) {
          fail(absl::StrCat("request ", a.spec.id, " to ", t.url, ": ", httplib::to_string(res.error())));
          return;
        }
        if (res->status == 429 || res->status == 503) {
          ++retries;
          if (attempt > 600) {
            fail(absl::StrCat("request ", a.spec.id, ": the server stayed busy (HTTP ", res->status, ") for 10 minutes"));
            return;
          }
          std::this_thread::sleep_for(std::chrono::seconds(1));
          continue;
        }
        if (res->status != 200) {
          fail(absl::StrCat("request ", a.spec.id, " (", is_target ? "target" : "background", "): HTTP ", res->status, ": ",
                            printable(res->body, 300)));
          return;
        }
        absl::StatusOr<ChoiceRecord> choice;
        if (t.stream) {
          choice = stream_status.ok() ? stream.finish() : absl::StatusOr<ChoiceRecord>(stream_status);
        } else {
          choice = parse_choice_body(api, res->body);
        }
        if (!choice.ok()) {
          fail(absl::StrCat("request ", a.spec.id, ": ", choice.status().message()));
          return;
        }
        tokens += int64_t(choice->tokens.size());
        if (is_target) {
          records[size_t(a.sample)] = std::move(*choice);
          const int done = ++targets_done;
          if (progress) {
            std::lock_guard<std::mutex> lock(error_mu);  // the callback is not thread-safe
            progress(done, workload.samples);
          }
        }
        break;
      }
    }
  };
  {
    std::vector<std::thread> threads;
    for (int c = 0; c < std::max(1, t.connections); ++c) threads.emplace_back(worker);
    for (auto& th : threads) th.join();
  }
  if (!first_error.empty()) return absl::UnavailableError(first_error);

  // Every target token needs something to group by; digests are samebits' when every token of
  // every sample carries one (then they cover the fp32 logits), else over what was returned.
  bool samebits = true;
  for (const ChoiceRecord& r : records)
    for (const TokenRecord& tok : r.tokens) samebits = samebits && tok.step_digest.has_value();
  for (size_t s = 0; s < records.size(); ++s) {
    const ChoiceRecord& r = records[s];
    TargetObservation& o = out.targets[s];
    o.sample = int(s);
    o.finish = r.finish_reason;
    if (r.tokens.empty() && !r.text.empty())
      return absl::InvalidArgumentError(absl::StrCat("sample ", s, ": the server returned text but no logprobs; ",
                                                     "it must honour `logprobs` (or give token_ids)"));
    for (size_t k = 0; k < r.tokens.size(); ++k) {
      const TokenRecord& tok = r.tokens[k];
      int32_t id = 0;
      if (tok.id) {
        id = *tok.id;
        if (tok.text) texts->note(id, *tok.text);
        else if (samebits && id < kByteVocab) texts->note(id, std::string(1, char(id)));  // samebits ids are bytes
      } else {
        id = texts->intern(tok.text.value_or(""));
      }
      const uint64_t step = samebits ? *tok.step_digest : returned_step_digest(tok);
      o.tokens.push_back(id);
      o.steps.push_back(step);
      o.digest = chain_digest(o.digest, step);
    }
    if (samebits && r.digest && *r.digest != o.digest)
      return absl::InvalidArgumentError(absl::StrCat("sample ", s, ": the server's chained digest ", digest_hex(*r.digest),
                                                     " does not chain its step digests (", digest_hex(o.digest), ")"));
  }
  out.figures.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.figures.tokens_generated = tokens;
  figures->requests = int64_t(workload.arrivals.size());
  figures->retries = retries;
  figures->samebits_digests = samebits;
  return out;
}

}  // namespace samebits::client
