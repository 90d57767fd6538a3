// BpeTokenizer against transformers (fixtures from models/tiny_qwen/train/make_tokenizer_fixtures.py):
// every string's ids, tokens and decodings equal AutoTokenizer's, decodings of id sequences cut
// inside multi-byte characters equal its lossy text, and bad tokenizer files are refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz/tokenizer_input.h"
#include "models/tiny_qwen/bpe_tokenizer.h"
#include "models/tiny_qwen/model_source.h"
#include "nlohmann/json.hpp"
#include "tests/support/test_support.h"

namespace samebits {
namespace {

using nlohmann::json;

std::string fixtures_dir() { return testing::source_dir() + "/models/tiny_qwen/fixtures"; }
std::string checkpoint_dir() { return fixtures_dir() + "/bpe_checkpoint"; }

json read_fixture(const std::string& name) {
  std::ifstream in(fixtures_dir() + "/" + name);
  EXPECT_TRUE(in.good()) << "missing fixture " << name;
  return json::parse(in);
}

const BpeTokenizer& fixture_tokenizer() {
  static const std::unique_ptr<BpeTokenizer> tok = [] {
    auto t = BpeTokenizer::load(checkpoint_dir());
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::move(*t) : nullptr;
  }();
  return *tok;
}

std::string escaped(const std::string& s) { return json(s).dump(); }

TEST(BpeTokenizer, EncodesEveryFixtureStringAsTransformers) {
  const json doc = read_fixture("tokenizer_cases.json");
  const BpeTokenizer& tok = fixture_tokenizer();
  ASSERT_EQ(tok.vocab_size(), doc["vocab_size"].get<int>());
  int checked = 0, multibyte = 0;
  for (const json& c : doc["encode"]) {
    const std::string text = c["text"];
    SCOPED_TRACE("text " + escaped(text));
    auto ids = tok.encode_text(text, /*add_special=*/false);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, c["ids"].get<std::vector<int32_t>>());
    auto with_special = tok.encode_text(text, /*add_special=*/true);
    ASSERT_TRUE(with_special.ok());
    EXPECT_EQ(*with_special, c["ids_add_special"].get<std::vector<int32_t>>());
    EXPECT_EQ(tok.decode(*ids, false), c["decoded"].get<std::string>());
    EXPECT_EQ(tok.decode(*ids, true), c["decoded_skip_special"].get<std::string>());
    ++checked;
    for (unsigned char ch : text) multibyte += ch >= 0x80;
  }
  EXPECT_GE(checked, 400);
  EXPECT_GT(multibyte, 500);  // accents, CJK, emoji are in the set
}

TEST(BpeTokenizer, DecodesCutsInsideCharactersAsTransformers) {
  const json doc = read_fixture("tokenizer_cases.json");
  const BpeTokenizer& tok = fixture_tokenizer();
  int replaced = 0;
  for (const json& c : doc["partial_decode"]) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    const std::string want = c["decoded"];
    EXPECT_EQ(tok.decode(ids, false), want) << json(ids).dump();
    replaced += want.find("\xef\xbf\xbd") != std::string::npos;
  }
  EXPECT_GT(replaced, 100);  // many cuts do fall inside a character
  for (const json& c : doc["out_of_range_decode"]) {
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.decode(ids, c["skip_special"].get<bool>()), c["decoded"].get<std::string>()) << json(ids).dump();
  }
}

TEST(BpeTokenizer, SpecialTokensAndBytes) {
  const BpeTokenizer& tok = fixture_tokenizer();
  auto ids = tok.encode_text("<|im_start|>\n<think>", false);
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->size(), 3u);
  EXPECT_TRUE(tok.is_special((*ids)[0]));    // <|im_start|> is special
  EXPECT_EQ(tok.token_bytes((*ids)[1]), "\n");
  EXPECT_FALSE(tok.is_special((*ids)[2]));   // <think> is an added token, not special
  EXPECT_EQ(tok.token_bytes((*ids)[2]), "<think>");
  for (int b = 0; b < 256; ++b) EXPECT_EQ(tok.token_bytes(tok.byte_token(uint8_t(b))), std::string(1, char(b)));
  EXPECT_EQ(tok.prompt_bos(), -1);  // Qwen prompts start without BOS
}

TEST(BpeTokenizer, RefusesInvalidUtf8) {
  auto ids = fixture_tokenizer().encode_text("ab\xe4\xb8", false);
  ASSERT_FALSE(ids.ok());
  EXPECT_NE(ids.status().message().find("byte 2 is not valid UTF-8"), std::string::npos) << ids.status();
}

TEST(Utf8, LossyAndDisplay) {
  // Maximal subparts: a cut 3-byte character is one U+FFFD; a stray continuation byte is one each.
  EXPECT_EQ(utf8_lossy("a\xe4\xb8"), "a\xef\xbf\xbd");
  EXPECT_EQ(utf8_lossy("\x80\x80"), "\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(utf8_lossy("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // surrogate
  EXPECT_EQ(utf8_lossy("\xc3\xa9"), "\xc3\xa9");
  EXPECT_EQ(display_text("caf\xc3"), "caf\\xC3");
  EXPECT_EQ(display_text("\xa9t\xc3\xa9\n\x01"), "\\xA9t\xc3\xa9\n?");
}

// A copy of the fixture checkpoint's tokenizer files with one field replaced.
class BadTokenizerFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("samebits_bad_tok_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    std::ifstream in(checkpoint_dir() + "/tokenizer.json");
    doc_ = json::parse(in);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string load_error() {
    std::ofstream(dir_ / "tokenizer.json") << doc_.dump();
    auto t = BpeTokenizer::load(dir_.string());
    EXPECT_FALSE(t.ok());
    return t.ok() ? "" : std::string(t.status().message());
  }
  std::filesystem::path dir_;
  json doc_;
};

TEST_F(BadTokenizerFile, NamesFileAndField) {
  struct Case {
    const char* pointer;
    json value;
    const char* expect;
  };
  const Case cases[] = {
      {"/model/type", "WordPiece", "model.type"},
      {"/normalizer", json{{"type", "NFKC"}}, "normalizer.type: 'NFKC' is not supported"},
      {"/pre_tokenizer/pretokenizers/0/pattern", json{{"Regex", "(unclosed"}}, "pretokenizers[0].pattern: pattern does not compile"},
      {"/model/merges/0", json::array({"h", "zz-not-a-token"}), "model.merges: entry 0"},
      {"/model/dropout", 0.1, "model.dropout"},
      {"/post_processor", json{{"type", "TemplateProcessing"}}, "post_processor.type"},
      // Fields of another type (these threw from nlohmann's value()) and ids that sized a table.
      {"/model/type", 5, "model.type: 5 is not a string"},
      {"/model/byte_fallback", "no", "model.byte_fallback: \"no\" is not true or false"},
      {"/model/ignore_merges", 1, "model.ignore_merges: 1 is not true or false"},
      {"/model/merges", json::object(), "model.merges: {} is not a list"},
      {"/normalizer", 5, "normalizer: 5 is not an object"},
      {"/normalizer", json{{"type", "Sequence"}, {"normalizers", json::array({"NFC"})}}, "normalizer.normalizers[0]: \"NFC\" is not an object"},
      {"/pre_tokenizer/pretokenizers/1", 5, "pre_tokenizer.pretokenizers[1]: 5 is not an object"},
      {"/pre_tokenizer/pretokenizers/0/behavior", false, "pretokenizers[0].behavior: false is not a string"},
      {"/pre_tokenizer/pretokenizers/1/use_regex", "yes", "pretokenizers[1].use_regex"},
      {"/pre_tokenizer/pretokenizers", "Split", "pre_tokenizer.pretokenizers: \"Split\" is not a list"},
      {"/added_tokens/0/special", "yes", "added_tokens[0].special: \"yes\" is not true or false"},
      {"/added_tokens/0/content", 7, "added_tokens[0].content: 7 is not a string"},
      {"/added_tokens/0/id", 2000000000, "added_tokens[0].id: '<|endoftext|>': id 2000000000 is not an integer in [0, "},
      {"/model/vocab/!", 2147483647, "model.vocab: '!': id 2147483647 is not an integer in [0, "},
      {"/added_tokens", json::object(), "added_tokens: {} is not a list"},
      {"/decoder", "ByteLevel", "decoder: \"ByteLevel\" is not an object"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pointer);
    SetUp();
    doc_[json::json_pointer(c.pointer)] = c.value;
    const std::string err = load_error();
    EXPECT_NE(err.find("tokenizer.json: "), std::string::npos) << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << err;
  }
}

TEST_F(BadTokenizerFile, TopLevelNotAnObject) {
  doc_ = json::array();
  EXPECT_NE(load_error().find("tokenizer.json: (top level): [] is not an object"), std::string::npos);
}

// tokenizer_config.json beside the fixture's tokenizer.json, read through from_files.
TEST(BpeTokenizer, BadTokenizerConfigNamesFileAndField) {
  std::ifstream in(checkpoint_dir() + "/tokenizer.json");
  std::stringstream text;
  text << in.rdbuf();
  struct Case {
    const char* config;
    const char* expect;
  };
  const Case cases[] = {
      {"[]", "tokenizer_config.json: (top level): [] is not an object"},
      {R"({"add_bos_token":"true"})", "tokenizer_config.json: add_bos_token: \"true\" is not true or false"},
      {R"({"clean_up_tokenization_spaces":1})", "clean_up_tokenization_spaces: 1 is not true or false"},
      {R"({"add_bos_token":true,"bos_token":{"content":5}})", "bos_token.content: 5 is not a string"},
      {R"({"add_bos_token":true,"bos_token":"<nope>"})", "bos_token: \"<nope>\" is not an added token"},
      {R"({"chat_template":1e309})", "tokenizer_config.json"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.config);
    TokenizerFiles files{"ckpt", text.str(), std::string(c.config), std::nullopt};
    auto t = BpeTokenizer::from_files(files);
    ASSERT_FALSE(t.ok());
    EXPECT_NE(std::string(t.status().message()).find(c.expect), std::string::npos) << t.status();
  }
  // Named templates whose entries are not objects are skipped, not thrown on.
  TokenizerFiles named{"ckpt", text.str(), std::string(R"({"chat_template":[1,{"name":2},{"name":"default","template":"x"}]})"),
                       std::nullopt};
  auto t = BpeTokenizer::from_files(named);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FALSE((*t)->chat_template().ok());  // "x" is not a template samebits renders
}

// The fuzz target's seeds (fuzz/corpus/fuzz_tokenizer, written by fuzz/corpus/text_seeds.py) load:
// the fuzzer starts from valid tokenizers and spends its executions past the format checks.
TEST(BpeTokenizer, FuzzSeedsLoad) {
  int seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(testing::source_dir() + "/fuzz/corpus/fuzz_tokenizer")) {
    SCOPED_TRACE(entry.path().string());
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const TokenizerFiles files = split_tokenizer_input(bytes.str());
    auto t = BpeTokenizer::from_files(files);
    ASSERT_TRUE(t.ok()) << t.status();
    auto ids = (*t)->encode_text("Hello world", true);
    ASSERT_TRUE(ids.ok());
    EXPECT_FALSE(ids->empty());
    ++seeds;
  }
  EXPECT_GE(seeds, 4);
}

TEST(BpeTokenizer, CheckpointDirectoryResolvesWithItsTokenizer) {
  auto model = resolve_model(checkpoint_dir());
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_NE(model->tokenizer, nullptr);
  EXPECT_NE(model->tokenizer->description().find("byte-level BPE"), std::string::npos);
  auto chat = model->tokenizer->chat_template();
  ASSERT_TRUE(chat.ok()) << chat.status();
  EXPECT_EQ(chat->name(), "Qwen3 ChatML");
  auto builtin = resolve_model(kBuiltinModelSpec);
  ASSERT_TRUE(builtin.ok());
  EXPECT_EQ(*builtin->tokenizer->encode_text("Hi", true), (std::vector<int32_t>{256, 'H', 'i'}));
  EXPECT_FALSE(builtin->tokenizer->chat_template().ok());
}

}  // namespace
}  // namespace samebits
