// A checkpoint with its own tokenizer.json end to end (the fixture checkpoint of
// models/tiny_qwen/fixtures/bpe_checkpoint, whose transformers encodings are in the fixtures):
// the scenario's prompt given as text, chat messages or token ids reaches the engine as exactly
// the ids transformers gives, and results and reports carry the completion's text through the
// checkpoint's tokenizer. Scenarios with messages on a model without a chat template are refused.
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "harness/scenario/experiment.h"
#include "models/tiny_qwen/bpe_tokenizer.h"
#include "models/tiny_qwen/tokenizer.h"
#include "nlohmann/json.hpp"
#include "tests/cli/subprocess.h"
#include "tests/support/test_support.h"

namespace samebits {
namespace {

using nlohmann::json;

std::string fixtures_dir() { return ::samebits::testing::source_dir() + "/models/tiny_qwen/fixtures"; }
std::string checkpoint_dir() { return fixtures_dir() + "/bpe_checkpoint"; }

json fixture(const std::string& name) {
  std::ifstream in(fixtures_dir() + "/" + name);
  return json::parse(in);
}

// A small scenario on the fixture checkpoint; `prompt_yaml` gives the prompt lines.
std::string write_scenario(const std::string& name, const std::string& model, const std::string& prompt_yaml) {
  const std::string path = ::samebits::testing::temp_path(name + ".yaml");
  std::ofstream(path) << "name: " << name << "\nmodel: " << model << "\n" << prompt_yaml
                      << "samples: 3\nmax_new_tokens: 6\nstop_at_eos: false\nseed: 5\n"
                         "engine: {block_size: 8, kv_blocks: 256, max_tokens_per_step: 64, max_seqs: 8, max_chunk: 16}\n"
                         "mix: {background: 4, prompt_len: {dist: uniform, min: 4, max: 20}, "
                         "output_len: {dist: uniform, min: 2, max: 6}, shared_prefix_fraction: 0.5}\n"
                         "modes: [invariant]\nbackend: cpu\n";
  return path;
}

ExperimentOptions quick() {
  ExperimentOptions o;
  o.threads = 1;
  return o;
}

std::vector<int32_t> chat_fixture_ids(const std::string& conversation, bool generation_prompt) {
  const json doc = fixture("chat_cases.json");
  for (const json& c : doc["cases"])
    if (c["template"] == "qwen3" && c["conversation"] == conversation && c["add_generation_prompt"] == generation_prompt &&
        c["enable_thinking"].is_null())
      return c["ids"].get<std::vector<int32_t>>();
  ADD_FAILURE() << "no fixture for " << conversation;
  return {};
}

TEST(CheckpointTokenizer, ChatMessagesEncodeAsTransformers) {
  const std::string path = write_scenario(
      "bpe_chat", checkpoint_dir(),
      "messages:\n  - {role: user, content: \"Tell me about Richard Feynman.\"}\nchat: {add_generation_prompt: true}\n");
  auto e = run_experiment(path, quick());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->workload.target_prompt, chat_fixture_ids("user_only", true));
  // Every background prompt is made of the checkpoint's ids.
  for (const Arrival& a : e->workload.arrivals)
    for (int32_t id : a.spec.prompt) EXPECT_LT(id, e->model.tokenizer->vocab_size());
  // The results' text is the completion's bytes through the checkpoint's tokenizer.
  const ModeResult& m = e->results.modes.at(0);
  ASSERT_FALSE(m.groups.empty());
  EXPECT_EQ(m.groups[0].tokens.size(), 6u);
  EXPECT_EQ(m.main_text(), display_text(e->model.tokenizer->decode_bytes(m.groups[0].tokens, true)));
  EXPECT_NE(m.main_text(), display_text(ByteTokenizer{}.decode(m.groups[0].tokens)));  // not bytes
}

TEST(CheckpointTokenizer, TextAndTokenPromptsEncodeAsTransformers) {
  int checked = 0;
  const json doc = fixture("tokenizer_cases.json");
  for (const json& c : doc["encode"]) {
    const std::string text = c["text"];
    if (text != "Tell me about Richard Feynman." && text != "Schrödinger wrote about the café in Zürich; Noether's théorème is naïve only in appearance.")
      continue;
    const std::string path = write_scenario("bpe_text", checkpoint_dir(), "prompt: " + json(text).dump() + "\n");
    auto e = run_experiment(path, quick());
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->workload.target_prompt, c["ids"].get<std::vector<int32_t>>()) << text;
    ++checked;
  }
  EXPECT_GE(checked, 2);  // both strings (the Feynman question also appears among the corpus lines)
  const std::string path = write_scenario("bpe_ids", checkpoint_dir(), "prompt_tokens: [2049, 872, 198]\n");
  auto e = run_experiment(path, quick());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->workload.target_prompt, (std::vector<int32_t>{2049, 872, 198}));
}

TEST(CheckpointTokenizer, BuiltinModelKeepsBytesAndRefusesMessages) {
  auto e = run_experiment(write_scenario("bytes_text", "builtin", "prompt: \"Hi\\n\"\n"), quick());
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->workload.target_prompt, (std::vector<int32_t>{256, 'H', 'i', '\n'}));
  auto chat = run_experiment(write_scenario("bytes_chat", "builtin", "messages:\n  - {role: user, content: Hi}\n"), quick());
  ASSERT_FALSE(chat.ok());
  EXPECT_NE(chat.status().message().find("messages: the model has no chat template"), std::string::npos) << chat.status();
}

TEST(CheckpointTokenizer, CliRunReportsTextThroughTheTokenizer) {
  const std::string path = write_scenario(
      "bpe_cli", checkpoint_dir(), "messages:\n  - {role: system, content: \"Be brief.\"}\n  - {role: user, content: Hi}\n");
  const std::string out = ::samebits::testing::temp_path("bpe_cli.json");
  ::samebits::testing::Outcome o = ::samebits::testing::run_samebits("run " + path + " --threads 1 --no-progress --json " + out);
  ASSERT_EQ(o.code, 0) << o.err;
  json j;
  std::ifstream(out) >> j;
  auto tok = BpeTokenizer::load(checkpoint_dir());
  ASSERT_TRUE(tok.ok());
  const json& group = j["modes"][0]["completions"][0];
  const std::string text = display_text((*tok)->decode_bytes(group["tokens"].get<std::vector<int32_t>>(), true));
  EXPECT_EQ(group["text"].get<std::string>(), text);
  EXPECT_NE(o.out.find("main completion"), std::string::npos) << o.out;
}

TEST(CheckpointTokenizer, PromptGivenTwiceOrNotAtAllIsRefused) {
  for (const std::string& prompt : {std::string("prompt: hi\nprompt_tokens: [1]\n"), std::string("chat: {add_generation_prompt: false}\n")}) {
    auto sc = load_scenario(write_scenario("bad_prompt", "builtin", prompt));
    ASSERT_FALSE(sc.ok()) << prompt;
    EXPECT_NE(sc.status().message().find("prompt"), std::string::npos) << sc.status();
  }
}

}  // namespace
}  // namespace samebits
