// The request parser of `samebits serve`, without a server: every bad request gets its OpenAI
// error object and status, good ones become the engine's request.
#include <ostream>

#include "gtest/gtest.h"
#include "harness/serve/openai_request.h"

namespace samebits::serve {
namespace {

RequestLimits limits() {
  RequestLimits l;
  l.model_names = {"m"};
  l.vocab_size = 258;
  l.bos_id = 256;
  l.max_model_len = 64;
  l.max_n = 4;
  return l;
}

struct BadCase {
  const char* name;
  Api api;
  std::string body;
  int status;
  const char* param;  // the field the error names ("" = none)
};
std::ostream& operator<<(std::ostream& os, const BadCase& c) {
  return os << c.name << " (" << (c.api == Api::kChat ? "chat" : "completions") << ", expect " << c.status << ")";
}

class BadRequest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadRequest, GetsItsStatusAndNamesTheField) {
  const BadCase& c = GetParam();
  ParsedRequest r = parse_generation_request(c.api, c.body, limits());
  ASSERT_TRUE(std::holds_alternative<ApiError>(r)) << c;
  const ApiError& e = std::get<ApiError>(r);
  EXPECT_EQ(e.status, c.status) << e.message;
  EXPECT_EQ(e.param, c.param) << e.message;
  EXPECT_FALSE(e.message.empty());
  const nlohmann::json j = error_json(e);
  EXPECT_EQ(j["error"]["message"], e.message);
  EXPECT_TRUE(j["error"].contains("type") && j["error"].contains("param") && j["error"].contains("code"));
}

const std::string kLong(70, 'a');
INSTANTIATE_TEST_SUITE_P(
    Cases, BadRequest,
    ::testing::Values(
        BadCase{"malformed JSON", Api::kCompletions, R"({"model": "m", "prompt": )", 400, ""},
        BadCase{"not an object", Api::kCompletions, R"([1, 2])", 400, ""},
        // Found by fuzz_http_request: a number beyond a double threw out of the parser.
        BadCase{"number beyond a double", Api::kCompletions, R"({"model": "m", "prompt": [943333333333333333E334, 101]})", 400, ""},
        BadCase{"integer beyond int64", Api::kCompletions, R"({"model": "m", "prompt": [18446744073709551615]})", 400, ""},
        BadCase{"repeated key", Api::kCompletions, R"({"model": "m", "prompt": "a", "prompt": "b"})", 400, ""},
        BadCase{"invalid UTF-8", Api::kCompletions, "{\"model\": \"m\", \"prompt\": \"\xff\xfe\"}", 400, ""},
        BadCase{"model missing", Api::kCompletions, R"({"prompt": "a"})", 400, "model"},
        BadCase{"unknown model", Api::kCompletions, R"({"model": "gpt-9", "prompt": "a"})", 404, "model"},
        BadCase{"prompt missing", Api::kCompletions, R"({"model": "m"})", 400, "prompt"},
        BadCase{"prompt a number", Api::kCompletions, R"({"model": "m", "prompt": 5})", 400, "prompt"},
        BadCase{"token id outside vocab", Api::kCompletions, R"({"model": "m", "prompt": [1, 999]})", 400, "prompt"},
        BadCase{"batch of prompts", Api::kCompletions, R"({"model": "m", "prompt": ["a", "b"]})", 400, "prompt"},
        BadCase{"huge prompt", Api::kCompletions, R"({"model": "m", "prompt": ")" + kLong + R"("})", 400, "prompt"},
        BadCase{"prompt + max_tokens beyond context", Api::kCompletions, R"({"model": "m", "prompt": "abc", "max_tokens": 61})",
                400, "max_tokens"},
        BadCase{"max_tokens 0", Api::kCompletions, R"({"model": "m", "prompt": "a", "max_tokens": 0})", 400, "max_tokens"},
        BadCase{"max_tokens negative", Api::kCompletions, R"({"model": "m", "prompt": "a", "max_tokens": -3})", 400, "max_tokens"},
        BadCase{"max_tokens a string", Api::kCompletions, R"({"model": "m", "prompt": "a", "max_tokens": "8"})", 400, "max_tokens"},
        BadCase{"max_tokens fractional", Api::kCompletions, R"({"model": "m", "prompt": "a", "max_tokens": 2.5})", 400, "max_tokens"},
        BadCase{"temperature a string", Api::kCompletions, R"({"model": "m", "prompt": "a", "temperature": "hot"})", 400, "temperature"},
        BadCase{"temperature above 2", Api::kCompletions, R"({"model": "m", "prompt": "a", "temperature": 3})", 400, "temperature"},
        BadCase{"top_p 0", Api::kCompletions, R"({"model": "m", "prompt": "a", "top_p": 0})", 400, "top_p"},
        BadCase{"n over the limit", Api::kCompletions, R"({"model": "m", "prompt": "a", "n": 5})", 400, "n"},
        BadCase{"n zero", Api::kCompletions, R"({"model": "m", "prompt": "a", "n": 0})", 400, "n"},
        BadCase{"stream not a bool", Api::kCompletions, R"({"model": "m", "prompt": "a", "stream": "yes"})", 400, "stream"},
        BadCase{"stop a number", Api::kCompletions, R"({"model": "m", "prompt": "a", "stop": 7})", 400, "stop"},
        BadCase{"too many stops", Api::kCompletions, R"({"model": "m", "prompt": "a", "stop": ["a","b","c","d","e"]})", 400, "stop"},
        BadCase{"logprobs above 20", Api::kCompletions, R"({"model": "m", "prompt": "a", "logprobs": 21})", 400, "logprobs"},
        BadCase{"penalty not supported", Api::kCompletions, R"({"model": "m", "prompt": "a", "presence_penalty": 1})", 400,
                "presence_penalty"},
        BadCase{"echo not supported", Api::kCompletions, R"({"model": "m", "prompt": "a", "echo": true})", 400, "echo"},
        BadCase{"messages on completions", Api::kCompletions, R"({"model": "m", "prompt": "a", "messages": []})", 400, "messages"},
        BadCase{"messages missing", Api::kChat, R"({"model": "m"})", 400, "messages"},
        BadCase{"messages empty", Api::kChat, R"({"model": "m", "messages": []})", 400, "messages"},
        BadCase{"role unknown", Api::kChat, R"({"model": "m", "messages": [{"role": "robot", "content": "a"}]})", 400,
                "messages[0].role"},
        BadCase{"content a number", Api::kChat, R"({"model": "m", "messages": [{"role": "user", "content": 1}]})", 400,
                "messages[0].content"},
        BadCase{"top_logprobs without logprobs", Api::kChat,
                R"({"model": "m", "messages": [{"role": "user", "content": "a"}], "top_logprobs": 3})", 400, "top_logprobs"},
        BadCase{"chat logprobs an integer", Api::kChat,
                R"({"model": "m", "messages": [{"role": "user", "content": "a"}], "logprobs": 3})", 400, "logprobs"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      std::string n = info.param.name;
      for (char& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

TEST(GoodRequest, CompletionsFieldsBecomeTheEngineRequest) {
  ParsedRequest r = parse_generation_request(
      Api::kCompletions,
      R"({"model": "m", "prompt": "Hi", "max_tokens": 7, "temperature": 0, "top_p": 0.5, "top_k": -1, "seed": 42,
          "n": 2, "stop": "\n", "stream": true, "logprobs": 3, "ignore_eos": true, "return_tokens_as_token_ids": true,
          "frequency_penalty": 0, "user": "x", "unknown_extra": {"a": 1}})",
      limits());
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(r)) << std::get<ApiError>(r).message;
  const GenerationRequest& g = std::get<GenerationRequest>(r);
  EXPECT_EQ(g.prompt, (std::vector<int32_t>{256, 'H', 'i'}));
  EXPECT_EQ(g.max_tokens, 7);
  EXPECT_EQ(g.sampling.temperature, 0.f);
  EXPECT_EQ(g.sampling.top_p, 0.5f);
  EXPECT_EQ(g.sampling.top_k, 0);
  EXPECT_EQ(g.sampling.seed, 42u);
  EXPECT_EQ(g.n, 2);
  EXPECT_EQ(g.stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(g.stream);
  EXPECT_EQ(g.logprobs, 3);
  EXPECT_TRUE(g.ignore_eos);
  EXPECT_TRUE(g.tokens_as_ids);
}

TEST(GoodRequest, DefaultsAsOpenAIDefinesThem) {
  ParsedRequest r = parse_generation_request(Api::kCompletions, R"({"model": "m", "prompt": [256, 65]})", limits());
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(r));
  const GenerationRequest& g = std::get<GenerationRequest>(r);
  EXPECT_EQ(g.prompt, (std::vector<int32_t>{256, 65}));  // token ids are taken as they are
  EXPECT_EQ(g.max_tokens, 16);
  EXPECT_EQ(g.sampling.temperature, 1.f);
  EXPECT_EQ(g.n, 1);
  EXPECT_EQ(g.logprobs, -1);
  EXPECT_FALSE(g.stream);
}

TEST(GoodRequest, ChatUsesTheCheckpointsPromptFormat) {
  ParsedRequest r = parse_generation_request(
      Api::kChat, R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                      "logprobs": true, "top_logprobs": 2, "max_completion_tokens": 5})",
      limits());
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(r)) << std::get<ApiError>(r).message;
  const GenerationRequest& g = std::get<GenerationRequest>(r);
  EXPECT_EQ(g.prompt, (std::vector<int32_t>{256, 'H', 'i', '\n'}));
  EXPECT_EQ(g.logprobs, 2);
  EXPECT_EQ(g.max_tokens, 5);
  // Chat's default max_tokens is whatever the context leaves.
  ParsedRequest d = parse_generation_request(Api::kChat, R"({"model": "m", "messages": [{"role": "user", "content": "Hi\n"}]})", limits());
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(d));
  EXPECT_EQ(std::get<GenerationRequest>(d).max_tokens, 64 - 4);
  EXPECT_EQ(std::get<GenerationRequest>(d).logprobs, -1);
}

}  // namespace
}  // namespace samebits::serve
