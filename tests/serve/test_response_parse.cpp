// Client mode's readers against response bodies in vLLM's and SGLang's documented shapes
// (fixtures/README.md says where each shape comes from) and samebits serve's own.
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "harness/client/response_parse.h"

namespace samebits::client {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(SAMEBITS_SERVE_FIXTURES) + "/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

ChoiceRecord parse_fixture(Api api, const std::string& name) {
  auto body = nlohmann::json::parse(fixture(name));
  auto choice = parse_choice(api, body);
  EXPECT_TRUE(choice.ok()) << name << ": " << choice.status().message();
  return choice.ok() ? *choice : ChoiceRecord{};
}

// Feeds a stream in pieces of `piece` bytes, as a network would split it.
ChoiceRecord parse_stream(Api api, const std::string& name, size_t piece) {
  const std::string bytes = fixture(name);
  StreamReader reader(api);
  for (size_t at = 0; at < bytes.size(); at += piece) {
    absl::Status s = reader.feed(std::string_view(bytes).substr(at, piece));
    EXPECT_TRUE(s.ok()) << name << ": " << s.message();
  }
  auto choice = reader.finish();
  EXPECT_TRUE(choice.ok()) << name << ": " << choice.status().message();
  return choice.ok() ? *choice : ChoiceRecord{};
}

std::vector<int32_t> ids_of(const ChoiceRecord& c) {
  std::vector<int32_t> ids;
  for (const TokenRecord& t : c.tokens) ids.push_back(t.id.value_or(-1));
  return ids;
}

const std::vector<int32_t> kIds = {11867, 88220, 1515, 572};

TEST(VllmFormat, CompletionsWithReturnTokenIdsGiveIdsAndText) {
  ChoiceRecord c = parse_fixture(Api::kCompletions, "vllm_completions_token_ids.json");
  EXPECT_EQ(ids_of(c), kIds);
  ASSERT_EQ(c.tokens.size(), 4u);
  EXPECT_EQ(c.tokens[1].text, " Feyn");
  EXPECT_DOUBLE_EQ(*c.tokens[2].logprob, -0.5);
  ASSERT_EQ(c.tokens[2].top.size(), 2u);
  EXPECT_EQ(c.tokens[2].top[1].first, "mann");
  EXPECT_EQ(c.text, " Richard Feynman was");
  EXPECT_EQ(c.finish_reason, "length");
  EXPECT_FALSE(c.tokens[0].step_digest.has_value());
}

TEST(VllmFormat, TokenIdPlaceholdersBecomeIds) {
  ChoiceRecord c = parse_fixture(Api::kCompletions, "vllm_completions_placeholders.json");
  EXPECT_EQ(ids_of(c), kIds);
  EXPECT_FALSE(c.tokens[0].text.has_value());  // a placeholder is no text
  EXPECT_EQ(c.tokens[3].top[1].first, "token_id:374");
  ChoiceRecord chat = parse_fixture(Api::kChat, "vllm_chat_placeholders.json");
  EXPECT_EQ(ids_of(chat), (std::vector<int32_t>{41006, 88220, 1515}));
  EXPECT_EQ(chat.text, "Richard Feynman");
  EXPECT_DOUBLE_EQ(*chat.tokens[0].logprob, -0.002);
  EXPECT_EQ(chat.tokens[0].top.size(), 2u);
}

TEST(VllmFormat, StreamedCompletionsEqualTheWholeResponse) {
  const ChoiceRecord whole = parse_fixture(Api::kCompletions, "vllm_completions_token_ids.json");
  for (size_t piece : {size_t(1), size_t(7), size_t(100000)}) {
    SCOPED_TRACE(::testing::Message() << "pieces of " << piece << " bytes");
    ChoiceRecord s = parse_stream(Api::kCompletions, "vllm_completions_stream.sse", piece);
    EXPECT_EQ(ids_of(s), kIds);
    EXPECT_EQ(s.text, whole.text);
    ASSERT_EQ(s.tokens.size(), whole.tokens.size());
    for (size_t i = 0; i < s.tokens.size(); ++i)
      EXPECT_EQ(returned_step_digest(s.tokens[i]), returned_step_digest(whole.tokens[i])) << "token " << i;
    EXPECT_EQ(s.finish_reason, "length");
  }
}

TEST(SglangFormat, CompletionsGiveTextOnly) {
  ChoiceRecord c = parse_fixture(Api::kCompletions, "sglang_completions.json");
  ASSERT_EQ(c.tokens.size(), 4u);
  for (const TokenRecord& t : c.tokens) EXPECT_FALSE(t.id.has_value());
  EXPECT_EQ(c.tokens[0].text, " Richard");
  EXPECT_DOUBLE_EQ(*c.tokens[3].logprob, -0.25);
  // Same text and logprobs as vLLM's decoded form: the same digest when no ids are involved.
  ChoiceRecord v = parse_fixture(Api::kCompletions, "vllm_completions_token_ids.json");
  TokenRecord v0 = v.tokens[0];
  v0.id.reset();
  EXPECT_EQ(returned_step_digest(c.tokens[0]), returned_step_digest(v0));
}

TEST(SglangFormat, StreamedChatWithCrlfEvents) {
  for (size_t piece : {size_t(1), size_t(13), size_t(100000)}) {
    SCOPED_TRACE(::testing::Message() << "pieces of " << piece << " bytes");
    ChoiceRecord c = parse_stream(Api::kChat, "sglang_chat_stream.sse", piece);
    ASSERT_EQ(c.tokens.size(), 3u);
    EXPECT_EQ(c.text, "Richard Feynman");
    EXPECT_EQ(c.tokens[2].text, "man");
    EXPECT_EQ(c.tokens[1].top[1].first, " Feynman");
    EXPECT_EQ(c.finish_reason, "length");
  }
}

TEST(ReturnedDigest, CoversIdTextLogprobAndAlternatives) {
  TokenRecord a;
  a.id = 5;
  a.logprob = -0.5;
  a.top = {{"x", -0.5}, {"y", -1.0}};
  const uint64_t base = returned_step_digest(a);
  TokenRecord b = a;
  b.id = 6;
  EXPECT_NE(returned_step_digest(b), base);
  b = a;
  b.logprob = std::nextafter(-0.5, 0.0);  // one ulp
  EXPECT_NE(returned_step_digest(b), base);
  b = a;
  b.top[1].second = -1.0000001;
  EXPECT_NE(returned_step_digest(b), base);
  b = a;
  b.text = "ignored when there is an id";
  EXPECT_EQ(returned_step_digest(b), base);
}

TEST(StreamErrors, AreErrors) {
  StreamReader r(Api::kCompletions);
  EXPECT_TRUE(r.feed("data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n").ok());
  EXPECT_FALSE(r.finish().ok());  // no [DONE]
  EXPECT_FALSE(r.feed("data: {\"error\":{\"message\":\"boom\"}}\n\n").ok());
  StreamReader bad(Api::kCompletions);
  EXPECT_FALSE(bad.feed("data: {not json\n\n").ok());
  // A number beyond a double in a server's event is an error, not an exception.
  StreamReader huge(Api::kCompletions);
  const absl::Status s = huge.feed("data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"logprobs\":1e309}]}\n\n");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("stream event 1"), std::string::npos) << s;
  EXPECT_EQ(parse_token_id_placeholder("token_id:12"), 12);
  EXPECT_FALSE(parse_token_id_placeholder("token_id:").has_value());
  EXPECT_FALSE(parse_token_id_placeholder("token_id:1x").has_value());
  EXPECT_FALSE(parse_token_id_placeholder("Richard").has_value());
}

// Bodies that threw or wrapped before the readers checked types and ranges (client mode: a server's
// answers are as hostile as any file).
TEST(HostileBodies, AreOneErrorNamingTheField) {
  struct Case {
    const char* body;
    const char* expect;
  };
  const Case bodies[] = {
      {"{\"choices\":[{\"text\":\"a\",\"token_ids\":[4294967301]}]}", "choices[0].token_ids[0]: 4294967301 is not a token id"},
      {"{\"choices\":[{\"text\":\"a\",\"token_ids\":[-1]}]}", "choices[0].token_ids[0]: -1 is not a token id"},
      {"{\"choices\":[{\"text\":\"a\",\"x\":1e309}]}", "the response body"},
      {"not json", "the response body"},
      {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "the response body"},
  };
  for (const Case& c : bodies) {
    SCOPED_TRACE(c.body);
    auto choice = parse_choice_body(Api::kCompletions, c.body);
    ASSERT_FALSE(choice.ok());
    EXPECT_NE(std::string(choice.status().message()).find(c.expect), std::string::npos) << choice.status();
  }
  auto ok = parse_choice_body(Api::kCompletions, "{\"choices\":[{\"text\":\"a\",\"token_ids\":[2147483647]}]}");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ids_of(*ok), std::vector<int32_t>{2147483647});
}

TEST(ModelList, ReadsSamebitsExtensionAndRefusesBadFields) {
  const std::string good =
      R"({"data":[{"id":5},{"id":"other"},{"id":"m","created":7,"samebits":{"weights_digest":"00000000000000ff",)"
      R"("kernel_set_version":3,"backend_id":"cpu","mode":"default"}}]})";
  auto info = parse_model_list(good, "m");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(info->is_samebits);
  EXPECT_EQ(info->weights_digest, 0xffu);
  EXPECT_EQ(info->kernel_set_version, 3);
  EXPECT_EQ(info->backend_id, "cpu");
  EXPECT_EQ(info->mode, Mode::kDefault);
  EXPECT_EQ(info->card.find("created"), std::string::npos);
  auto plain = parse_model_list(R"({"data":[{"id":"m","owned_by":"vllm"}]})", "m");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->is_samebits);
  EXPECT_TRUE(absl::IsNotFound(parse_model_list(R"({"data":[]})", "m").status()));
  struct Case {
    const char* ext;
    const char* expect;
  };
  // Each of these threw (value() of another type) or converted a double out of int's range.
  const Case cases[] = {
      {R"({"kernel_set_version":1e300})", "samebits.kernel_set_version: 1e+300 is not a non-negative integer"},
      {R"({"kernel_set_version":"3"})", "samebits.kernel_set_version"},
      {R"({"weights_digest":7})", "samebits.weights_digest: 7 is not 16 hex digits"},
      {R"({"backend_id":[]})", "samebits.backend_id"},
      {R"({"mode":"fast"})", "samebits.mode: \"fast\" is not invariant or default"},
      {R"(true)", "samebits.: true is not an object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.ext);
    auto bad = parse_model_list(std::string(R"({"data":[{"id":"m","samebits":)") + c.ext + "}]}", "m");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(std::string(bad.status().message()).find(c.expect), std::string::npos) << bad.status();
  }
  EXPECT_FALSE(parse_model_list(R"({"data":{}})", "m").ok());
  EXPECT_FALSE(parse_model_list("{\"data\":[1e309]}", "m").ok());
}

}  // namespace
}  // namespace samebits::client
