// Client mode end to end against stand-in servers that answer in vLLM's and SGLang's documented
// shapes (see fixtures/README.md): text-only tokens (SGLang) and "token_id:N" strings (vLLM's
// --return-tokens-as-token-ids) go through the whole run into results, and one changed logprob
// is a second logprob stream (the inverse).
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "gtest/gtest.h"
#include "harness/scenario/experiment.h"
#include "httplib.h"
#include "tests/cli/subprocess.h"

namespace samebits::testing {
namespace {

using nlohmann::json;

enum class Shape { kSglang, kVllmPlaceholders };

struct FakeCase {
  const char* name;
  Shape shape;
  bool perturb_one;  // one target response carries a logprob one step off
};
std::ostream& operator<<(std::ostream& os, const FakeCase& c) { return os << c.name; }

// A server that answers every completion with the same four tokens (or, for the 3rd target
// request when perturbing, one logprob changed).
class FakeServer {
 public:
  FakeServer(Shape shape, bool perturb_one) {
    server_.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model","created":1764500000,"owned_by":"vllm","max_model_len":40960}]})",
                      "application/json");
    });
    server_.Post("/v1/completions", [this, shape, perturb_one](const httplib::Request& req, httplib::Response& res) {
      json body = json::parse(req.body);
      const bool target = body.contains("logprobs");
      const int n = target ? ++targets_ : 0;
      const double lp = perturb_one && n == 3 ? -0.2500001 : -0.25;
      json choice;
      if (shape == Shape::kSglang) {
        choice = json::parse(R"({"index":0,"text":" Richard Feynman was","finish_reason":"length","matched_stop":null})");
        if (target)
          choice["logprobs"] = {{"text_offset", {-1, -1, -1, -1}},
                                {"token_logprobs", {-0.0123, -0.0001, -0.5, lp}},
                                {"tokens", {" Richard", " Feyn", "man", " was"}},
                                {"top_logprobs", {{{" Richard", -0.0123}}, {{" Feyn", -0.0001}}, {{"man", -0.5}}, {{" was", lp}}}}};
      } else {
        choice = json::parse(R"({"index":0,"text":" Richard Feynman was","finish_reason":"length","stop_reason":null})");
        if (target)
          choice["logprobs"] = {{"text_offset", {0, 14, 25, 35}},
                                {"token_logprobs", {-0.0123, -0.0001, -0.5, lp}},
                                {"tokens", {"token_id:11867", "token_id:88220", "token_id:1515", "token_id:572"}},
                                {"top_logprobs", {{{"token_id:11867", -0.0123}}, {{"token_id:88220", -0.0001}},
                                                  {{"token_id:1515", -0.5}}, {{"token_id:572", lp}}}}};
      }
      json out = {{"id", "cmpl-" + std::to_string(++requests_)}, {"object", "text_completion"}, {"created", 1764500000},
                  {"model", "Qwen/Qwen3-8B"}, {"choices", {choice}},
                  {"usage", {{"prompt_tokens", 8}, {"completion_tokens", 4}, {"total_tokens", 12}}}};
      res.set_content(out.dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  int requests() const { return requests_; }

 private:
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
  std::atomic<int> targets_{0}, requests_{0};
};

class ClientModeAgainst : public ::testing::TestWithParam<FakeCase> {};

TEST_P(ClientModeAgainst, RecordsWhatTheServerReturnsPerToken) {
  const FakeCase& c = GetParam();
  FakeServer server(c.shape, c.perturb_one);
  const std::string scenario = temp_path("fake.yaml");
  std::ofstream(scenario) << "name: fake\nprompt: \"Tell me about Richard Feynman.\\n\"\nsamples: 6\nmax_new_tokens: 4\n"
                             "mix: {background: 6, output_len: {dist: fixed, value: 4}}\nlive: {step_us: 0}\n"
                             "target: {url: http://127.0.0.1:1/v1, model: Qwen/Qwen3-8B, connections: 4, mode: invariant}\n";
  ExperimentOptions o;
  o.target_url = server.url();
  auto e = run_experiment(scenario, o);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(server.requests(), 12);
  const RunResults& r = e->results;
  EXPECT_EQ(r.identity.backend.id, "http-Qwen-Qwen3-8B");
  ASSERT_EQ(r.modes.size(), 1u);
  const ModeResult& m = r.modes[0];
  EXPECT_EQ(m.mode, Mode::kInvariant);  // as the scenario's target claims
  EXPECT_EQ(m.unique_completions(), 1);
  EXPECT_EQ(m.unique_logit_streams(), c.perturb_one ? 2 : 1);
  EXPECT_EQ(m.earliest_logit_divergence, c.perturb_one ? 3 : -1);
  if (c.shape == Shape::kVllmPlaceholders) {
    EXPECT_EQ(m.groups[0].tokens, (std::vector<int32_t>{11867, 88220, 1515, 572}));
  } else {
    EXPECT_EQ(m.main_text(), " Richard Feynman was");
    for (int32_t t : m.groups[0].tokens) EXPECT_LT(t, 0) << "text-only tokens are grouped by interned text";
  }
  // The dependencies of a golden: the server's model card (its "created" time left out).
  EXPECT_NE(r.identity.model.description.find("Qwen/Qwen3-8B"), std::string::npos);
  EXPECT_EQ(r.identity.model.description.find("created"), std::string::npos);
  std::filesystem::remove(scenario);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ClientModeAgainst,
                         ::testing::Values(FakeCase{"SglangTextOnly", Shape::kSglang, false},
                                           FakeCase{"SglangOneLogprobOff", Shape::kSglang, true},
                                           FakeCase{"VllmTokenIdStrings", Shape::kVllmPlaceholders, false},
                                           FakeCase{"VllmOneLogprobOff", Shape::kVllmPlaceholders, true}),
                         [](const ::testing::TestParamInfo<FakeCase>& i) { return std::string(i.param.name); });

TEST(ClientModeErrors, UnreachableServerAndBadTargetAreInputErrors) {
  Outcome o = run_samebits("run scenarios/serve_ci.yaml --no-progress --target-url http://127.0.0.1:1/v1");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.err.find("http://127.0.0.1:1/v1"), std::string::npos) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  const std::string scenario = temp_path("bad_target.yaml");
  std::ofstream(scenario) << "name: bad\nprompt: \"x\"\nsamples: 1\nmax_new_tokens: 1\ntarget: {url: ftp://h/v1, model: m}\n";
  Outcome bad = run_samebits("run " + scenario + " --no-progress");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("target.url"), std::string::npos) << bad.err;
  std::filesystem::remove(scenario);
}

}  // namespace
}  // namespace samebits::testing
