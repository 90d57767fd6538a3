// Chat templates against transformers' apply_chat_template (fixtures: chat_cases.json, made by
// models/tiny_qwen/train/make_tokenizer_fixtures.py with Qwen2.5's and Qwen3's shipped templates):
// the rendered text and its ids are identical for every conversation, generation-prompt and
// thinking setting; other templates and roles are refused with a clear error.
#include <gtest/gtest.h>

#include <fstream>

#include "models/tiny_qwen/bpe_tokenizer.h"
#include "models/tiny_qwen/chat_template.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_support.h"

namespace samebits {
namespace {

using nlohmann::json;

std::string fixtures_dir() { return testing::source_dir() + "/models/tiny_qwen/fixtures"; }

json chat_fixture() {
  std::ifstream in(fixtures_dir() + "/chat_cases.json");
  EXPECT_TRUE(in.good());
  return json::parse(in);
}

std::vector<ChatMessage> messages_of(const json& list) {
  std::vector<ChatMessage> out;
  for (const json& m : list) {
    ChatMessage msg{m["role"], m["content"], std::nullopt};
    if (m.contains("reasoning_content")) msg.reasoning_content = m["reasoning_content"].get<std::string>();
    out.push_back(std::move(msg));
  }
  return out;
}

TEST(ChatTemplate, RendersAsTransformersForEveryCase) {
  const json doc = chat_fixture();
  auto tok = BpeTokenizer::load(fixtures_dir() + "/bpe_checkpoint");
  ASSERT_TRUE(tok.ok()) << tok.status();
  int checked = 0;
  for (const json& c : doc["cases"]) {
    const std::string name = c["template"];
    SCOPED_TRACE(name + " / " + c["conversation"].get<std::string>() + " / gen " + c["add_generation_prompt"].dump() +
                 " / thinking " + c["enable_thinking"].dump());
    ASSERT_TRUE(c["error"].is_null()) << c["error"];
    auto tpl = ChatTemplate::recognise(doc["templates"][name].get<std::string>(), name);
    ASSERT_TRUE(tpl.ok()) << tpl.status();
    ChatOptions options;
    options.add_generation_prompt = c["add_generation_prompt"];
    if (!c["enable_thinking"].is_null()) options.enable_thinking = c["enable_thinking"].get<bool>();
    auto text = tpl->render(messages_of(c["messages"]), options);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_EQ(*text, c["rendered"].get<std::string>());
    auto ids = (*tok)->encode_text(*text, /*add_special=*/false);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, c["ids"].get<std::vector<int32_t>>());
    ++checked;
  }
  EXPECT_EQ(checked, 192);
}

TEST(ChatTemplate, CheckpointTemplateIsQwen3) {
  const json doc = chat_fixture();
  auto tok = BpeTokenizer::load(fixtures_dir() + "/bpe_checkpoint");
  ASSERT_TRUE(tok.ok());
  auto tpl = (*tok)->chat_template();
  ASSERT_TRUE(tpl.ok()) << tpl.status();
  EXPECT_EQ(tpl->kind(), ChatTemplateKind::kQwen3);
  auto text = tpl->render({{"user", "Tell me about Richard Feynman.", std::nullopt}}, ChatOptions{});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, doc["checkpoint_default_render"].get<std::string>());
}

TEST(ChatTemplate, WhitespaceDoesNotMatterButTextDoes) {
  const json doc = chat_fixture();
  const std::string qwen3 = doc["templates"]["qwen3"];
  std::string reindented;
  for (char c : qwen3) reindented += c == '\n' ? std::string("\n  ") : std::string(1, c);
  EXPECT_TRUE(ChatTemplate::recognise(reindented, "x").ok());
  std::string changed = qwen3;
  changed.replace(changed.find("<|im_start|>"), 12, "<|im_begin|>");
  auto r = ChatTemplate::recognise(changed, "DIR/tokenizer_config.json: chat_template");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("DIR/tokenizer_config.json: chat_template: not a chat template samebits renders"),
            std::string::npos)
      << r.status();
}

TEST(ChatTemplate, RefusesToolsAndEmptyConversations) {
  const ChatTemplate tpl(ChatTemplateKind::kQwen3);
  auto r = tpl.render({{"user", "hi", std::nullopt}, {"tool", "{}", std::nullopt}}, ChatOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("messages[1].role: 'tool' is not supported"), std::string::npos) << r.status();
  EXPECT_FALSE(tpl.render({}, ChatOptions{}).ok());
}

}  // namespace
}  // namespace samebits
