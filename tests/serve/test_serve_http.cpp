// `samebits serve` through real HTTP: the CI-size Feynman scenario in client mode (invariant: one
// completion, one logprob stream, the in-process digests, its golden; default: divergence seen),
// streamed vs whole responses, bad requests, a client that disconnects mid-stream, and SIGTERM.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "gtest/gtest.h"
#include "harness/client/response_parse.h"
#include "httplib.h"
#include "tests/cli/subprocess.h"
#include "tests/serve/serve_process.h"

namespace samebits::testing {
namespace {

using nlohmann::json;

const std::string kModel = "samebits-builtin";

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in, nullptr, false);
}

// Polls /health until `done` holds (or 60 s pass); the last health seen.
json wait_for_health(int port, const std::function<bool(const json&)>& done) {
  json h;
  for (int i = 0; i < 600; ++i) {
    h = http_get(port, "/health").json();
    if (!h.is_discarded() && done(h)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return h;
}

bool idle_and_all_blocks_free(const json& h) {
  return h["running"] == 0 && h["waiting"] == 0 && h["in_flight"] == 0 && h["kv_blocks_free"] == h["kv_blocks_total"];
}

class ServeInvariant : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServeProcess({"--mode", "invariant", "--max-body-bytes", "65536", "--max-n", "4"});
  }
  static void TearDownTestSuite() {
    std::string output;
    EXPECT_EQ(server_->stop(&output), 0) << output;
    delete server_;
  }
  void SetUp() override { ASSERT_TRUE(server_->ok()) << server_->banner(); }
  static ServeProcess* server_;
};
ServeProcess* ServeInvariant::server_ = nullptr;

TEST_F(ServeInvariant, FeynmanThroughHttpGivesOneCompletionAndOneLogprobStream) {
  const std::string json_path = temp_path("http.json");
  Outcome o = run_samebits("run scenarios/serve_ci.yaml --no-progress --target-url " + server_->url() + " --json " + json_path);
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  json r = read_json(json_path);
  ASSERT_FALSE(r.is_discarded());
  EXPECT_EQ(r["identity"]["backend"]["id"], "http-samebits-builtin");
  ASSERT_EQ(r["modes"].size(), 1u);
  const json& m = r["modes"][0];
  EXPECT_EQ(m["mode"], "invariant");
  EXPECT_EQ(m["samples"], 16);
  EXPECT_EQ(m["unique_completions"], 1);
  EXPECT_EQ(m["unique_logit_streams"], 1);
  EXPECT_EQ(m["main_text"].get<std::string>().substr(0, 15), "Richard Feynman");

  // Through HTTP the digests are the engine's own: the same as the workload served in-process.
  const std::string local_path = temp_path("local.json");
  Outcome local = run_samebits("run scenarios/serve_ci.yaml --no-progress --in-process --mode invariant --threads 1 --json " + local_path);
  ASSERT_EQ(local.code, 0) << local.out << local.err;
  json l = read_json(local_path);
  EXPECT_EQ(l["identity"]["backend"]["id"], "cpu");
  EXPECT_EQ(l["modes"][0]["streams"][0]["digest"], m["streams"][0]["digest"]);
  EXPECT_EQ(l["modes"][0]["completions"][0]["tokens"], m["completions"][0]["tokens"]);
  std::filesystem::remove(json_path);
  std::filesystem::remove(local_path);
}

TEST_F(ServeInvariant, GoldenCheckThroughHttpPassesAndCatchesAChangedDigest) {
  Outcome o = run_samebits("golden check scenarios/serve_ci.yaml --no-progress --target-url " + server_->url());
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("golden check passed"), std::string::npos) << o.out;

  // The inverse: the same golden with one step digest changed is a mismatch (exit 1).
  const std::string dir = temp_path("golden");
  std::filesystem::create_directories(dir + "/serve_ci");
  json g = read_json(std::string(SAMEBITS_SOURCE_DIR) + "/golden/serve_ci/http-samebits-builtin.json");
  ASSERT_FALSE(g.is_discarded());
  std::string text = g.dump();
  const std::string digest = g["modes"]["invariant"]["completion_digest"].get<std::string>();
  for (size_t at = text.find(digest); at != std::string::npos; at = text.find(digest, at + 1))
    text[at] = text[at] == '0' ? '1' : '0';
  std::ofstream(dir + "/serve_ci/http-samebits-builtin.json") << text;
  Outcome bad = run_samebits("golden check scenarios/serve_ci.yaml --no-progress --target-url " + server_->url() +
                             " --golden-dir " + dir);
  EXPECT_EQ(bad.code, 1) << bad.out << bad.err;
  std::filesystem::remove_all(dir);
}

TEST_F(ServeInvariant, StreamedAndWholeResponsesCarryTheSameTokens) {
  struct Case {
    const char* path;
    client::Api api;
    json body;
  };
  const Case cases[] = {
      {"/v1/completions", client::Api::kCompletions,
       {{"model", kModel}, {"prompt", "Tell me about Richard Feynman.\n"}, {"max_tokens", 40}, {"temperature", 0}, {"logprobs", 3}}},
      {"/v1/chat/completions", client::Api::kChat,
       {{"model", kModel}, {"messages", {{{"role", "user"}, {"content", "Who was Marie Curie?"}}}}, {"max_tokens", 40},
        {"temperature", 0}, {"logprobs", true}, {"top_logprobs", 3}, {"stop", "."}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    HttpReply whole = http_post(server_->port(), c.path, c.body.dump());
    ASSERT_EQ(whole.status, 200) << whole.body;
    auto w = client::parse_choice(c.api, whole.json());
    ASSERT_TRUE(w.ok()) << w.status().message();
    json streamed_body = c.body;
    streamed_body["stream"] = true;
    HttpReply streamed = http_post(server_->port(), c.path, streamed_body.dump());
    ASSERT_EQ(streamed.status, 200);
    client::StreamReader reader(c.api);
    ASSERT_TRUE(reader.feed(streamed.body).ok());
    auto s = reader.finish();
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_GT(reader.events(), 3);
    EXPECT_EQ(s->text, w->text);
    EXPECT_EQ(s->finish_reason, w->finish_reason);
    ASSERT_EQ(s->tokens.size(), w->tokens.size());
    ASSERT_FALSE(w->tokens.empty());
    for (size_t i = 0; i < w->tokens.size(); ++i) {
      EXPECT_EQ(s->tokens[i].id, w->tokens[i].id) << i;
      EXPECT_EQ(s->tokens[i].step_digest, w->tokens[i].step_digest) << i;
      EXPECT_EQ(s->tokens[i].logprob, w->tokens[i].logprob) << i;
    }
    EXPECT_EQ(s->digest, w->digest);
    // Usage is in every response, streamed ones included.
    EXPECT_EQ(whole.json()["usage"]["completion_tokens"], int(w->tokens.size()));
    EXPECT_NE(streamed.body.find("\"usage\""), std::string::npos);
    EXPECT_EQ(streamed.body.substr(streamed.body.size() - 14), "data: [DONE]\n\n");
  }
}

TEST_F(ServeInvariant, EachBadRequestGetsItsStatusAndTheServerKeepsServing) {
  struct Case {
    const char* name;
    const char* path;
    std::string body;
    int status;
  };
  const std::string good = json({{"model", kModel}, {"prompt", "Hi"}, {"max_tokens", 2}}).dump();
  const Case cases[] = {
      {"malformed JSON", "/v1/completions", "{\"model\": \"samebits-builtin\", \"prompt\": ", 400},
      {"wrong type", "/v1/completions", R"({"model": "samebits-builtin", "prompt": "a", "max_tokens": "many"})", 400},
      {"wrong type in chat", "/v1/chat/completions", R"({"model": "samebits-builtin", "messages": "hello"})", 400},
      {"huge body", "/v1/completions", json({{"model", kModel}, {"prompt", std::string(100000, 'a')}}).dump(), 413},
      {"prompt beyond the context", "/v1/completions", json({{"model", kModel}, {"prompt", std::string(2000, 'a')}}).dump(), 400},
      {"max_tokens 0", "/v1/completions", R"({"model": "samebits-builtin", "prompt": "a", "max_tokens": 0})", 400},
      {"max_tokens negative", "/v1/completions", R"({"model": "samebits-builtin", "prompt": "a", "max_tokens": -1})", 400},
      {"n over the limit", "/v1/completions", R"({"model": "samebits-builtin", "prompt": "a", "n": 5})", 400},
      {"invalid UTF-8", "/v1/completions", "{\"model\": \"samebits-builtin\", \"prompt\": \"\xc3\x28\"}", 400},
      {"unknown model", "/v1/completions", R"({"model": "gpt-4o", "prompt": "a"})", 404},
      {"unknown route", "/v1/embeddings", good, 404},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    HttpReply r = http_post(server_->port(), c.path, c.body);
    EXPECT_EQ(r.status, c.status) << r.body;
    json e = r.json();
    ASSERT_TRUE(!e.is_discarded() && e.contains("error")) << r.body;
    EXPECT_TRUE(e["error"]["message"].is_string() && e["error"]["type"].is_string());
    HttpReply ok = http_post(server_->port(), "/v1/completions", good);
    EXPECT_EQ(ok.status, 200) << ok.body;
  }
  EXPECT_EQ(http_get(server_->port(), "/health").status, 200);
  json models = http_get(server_->port(), "/v1/models").json();
  EXPECT_EQ(models["data"][0]["id"], kModel);
  EXPECT_EQ(models["data"][0]["samebits"]["mode"], "invariant");
  // The card describes the model without telling clients where the server keeps its files.
  EXPECT_EQ(models.dump().find(SAMEBITS_SOURCE_DIR), std::string::npos) << models.dump();
}

TEST_F(ServeInvariant, DisconnectMidStreamCancelsAndFreesTheKvBlocks) {
  const json before = wait_for_health(server_->port(), idle_and_all_blocks_free);
  ASSERT_TRUE(idle_and_all_blocks_free(before)) << before.dump();
  httplib::Client c("127.0.0.1", server_->port());
  const std::string body = json({{"model", kModel}, {"prompt", "Tell me about Richard Feynman.\n"}, {"max_tokens", 900},
                                 {"ignore_eos", true}, {"stream", true}})
                               .dump();
  size_t received = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, size_t n, uint64_t, uint64_t) {
    received += n;
    return received < 2000;  // a few tokens in, the client goes away
  };
  auto res = c.send(req);
  EXPECT_FALSE(res);  // cancelled by the client
  EXPECT_GE(received, 2000u);
  const json after = wait_for_health(server_->port(), [&](const json& h) {
    return idle_and_all_blocks_free(h) && h["requests_cancelled"] > before["requests_cancelled"];
  });
  EXPECT_TRUE(idle_and_all_blocks_free(after)) << after.dump();
  EXPECT_EQ(after["requests_cancelled"], before["requests_cancelled"].get<int>() + 1) << after.dump();
  EXPECT_LT(after["tokens_generated"].get<int>() - before["tokens_generated"].get<int>(), 900);
}

// serve_ci.yaml with `from` replaced by `to` (the text must hold `from`), written to a temp file.
std::string serve_ci_variant(const std::string& name, const std::string& from, const std::string& to) {
  std::string text = read_text(std::string(SAMEBITS_SOURCE_DIR) + "/scenarios/serve_ci.yaml");
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "scenarios/serve_ci.yaml no longer holds '" << from << "'";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// The inverse of the invariant test: a default-mode server must show that batch mixes change bits.
// Whether samples of one run differ depends on timing (a fast server may serve every target alone;
// a loaded one may batch them all alike), so the traffic is made dense (arrival steps of 2 ms) and
// the run's logit streams are also set against the target served alone: at least two distinct
// streams must appear among them.
TEST(ServeDefault, FeynmanThroughHttpSeesDivergence) {
  ServeProcess server({"--mode", "default"});
  ASSERT_TRUE(server.ok()) << server.banner();
  const std::string dense = serve_ci_variant("dense.yaml", "step_us: 20000", "step_us: 2000");
  const std::string alone = serve_ci_variant("alone.yaml", "background: 32", "background: 0");
  const std::string json_path = temp_path("default.json"), alone_path = temp_path("alone.json");
  Outcome o = run_samebits("run " + dense + " --no-progress --target-url " + server.url() + " --json " + json_path);
  ASSERT_EQ(o.code, 0) << o.out << o.err;  // default mode promises nothing: divergence is reported, not a failure
  o = run_samebits("run " + alone + " --samples 1 --no-progress --target-url " + server.url() + " --json " + alone_path);
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  const json r = read_json(json_path), solo = read_json(alone_path);
  const json& m = r["modes"][0];
  EXPECT_EQ(m["mode"], "default");
  std::set<std::string> streams;
  for (const json& s : m["streams"]) streams.insert(s["digest"].get<std::string>());
  ASSERT_EQ(solo["modes"][0]["streams"].size(), 1u);
  const std::string solo_digest = solo["modes"][0]["streams"][0]["digest"];
  streams.insert(solo_digest);
  EXPECT_GT(streams.size(), 1u) << "real concurrency mixes the batches; default mode must show it (run: "
                                << m["unique_logit_streams"] << " streams, alone: " << solo_digest << ")";
  if (m["unique_logit_streams"].get<int>() > 1) {
    EXPECT_GE(m["first_logit_divergence"].get<int>(), 0);
  }
  for (const std::string& p : {dense, alone, json_path, alone_path}) std::filesystem::remove(p);
  EXPECT_EQ(server.stop(), 0);
}

TEST(ServeShutdown, SigtermLetsRequestsInFlightFinishThenExitsZero) {
  auto server = std::make_unique<ServeProcess>(std::vector<std::string>{});
  ASSERT_TRUE(server->ok()) << server->banner();
  const int port = server->port();
  const std::string body =
      json({{"model", kModel}, {"prompt", "Who was Marie Curie?\n"}, {"max_tokens", 400}, {"ignore_eos", true}}).dump();
  std::vector<HttpReply> replies(4);
  std::vector<std::thread> clients;
  for (auto& r : replies) clients.emplace_back([&r, port, &body] { r = http_post(port, "/v1/completions", body); });
  const json busy = wait_for_health(port, [](const json& h) { return h["in_flight"] == 4; });
  ASSERT_EQ(busy["in_flight"], 4) << busy.dump();
  std::string output;
  EXPECT_EQ(server->stop(&output), 0) << output;
  for (auto& t : clients) t.join();
  for (const HttpReply& r : replies) {
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["usage"]["completion_tokens"], 400);
  }
  EXPECT_NE(output.find("stopped after 4 requests"), std::string::npos) << output;
  EXPECT_EQ(http_get(port, "/health").status, -1);  // nobody listens any more
}

}  // namespace
}  // namespace samebits::testing
