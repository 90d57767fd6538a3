// Encoding speed of BpeTokenizer (the fixture checkpoint's tokenizer.json: byte-level BPE in
// Qwen2's format, 1,792 merges) on one thread, bytes/s of UTF-8 input:
//   english:      the repository's README files (prose, tables, code), 1 MiB;
//   multilingual: the fixture strings (accents, CJK, emoji, digits, whitespace runs, special
//                 tokens) and the README text, 1 MiB;
// each with the piece cache on (as in use: prompts repeat words) and off (every piece merged).
// prompt: one chat-rendered Feynman prompt per iteration (what a scenario encodes).
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "models/tiny_qwen/bpe_tokenizer.h"
#include "nlohmann/json.hpp"

namespace samebits {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(std::string(SAMEBITS_SOURCE_DIR) + "/" + path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string repeat_to(const std::string& text, size_t bytes) {
  std::string out;
  while (out.size() < bytes) out += text;
  return out;
}

const std::string& english() {
  static const std::string s = repeat_to(read("README.md") + read("models/tiny_qwen/README.md"), 1 << 20);
  return s;
}

const std::string& multilingual() {
  static const std::string s = [] {
    std::ifstream in(std::string(SAMEBITS_SOURCE_DIR) + "/models/tiny_qwen/fixtures/tokenizer_cases.json");
    const nlohmann::json doc = nlohmann::json::parse(in);
    std::string text;
    for (const auto& c : doc["encode"]) text += c["text"].get<std::string>() + "\n";
    return repeat_to(text, 1 << 20);
  }();
  return s;
}

std::unique_ptr<BpeTokenizer> load() {
  auto t = BpeTokenizer::load(std::string(SAMEBITS_SOURCE_DIR) + "/models/tiny_qwen/fixtures/bpe_checkpoint");
  if (!t.ok()) {
    fprintf(stderr, "%s\n", std::string(t.status().message()).c_str());
    std::exit(2);
  }
  return std::move(*t);
}

void encode(benchmark::State& state, const std::string& text, bool cache) {
  auto tok = load();
  tok->set_piece_cache(cache);
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tok->encode_text(text, false);
    tokens = ids->size();
    benchmark::DoNotOptimize(ids->data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
  state.counters["bytes_per_token"] = double(text.size()) / double(tokens);
}

void BM_EncodeEnglishCached(benchmark::State& s) { encode(s, english(), true); }
void BM_EncodeEnglishUncached(benchmark::State& s) { encode(s, english(), false); }
void BM_EncodeMultilingualCached(benchmark::State& s) { encode(s, multilingual(), true); }
void BM_EncodeMultilingualUncached(benchmark::State& s) { encode(s, multilingual(), false); }

void BM_EncodeChatPrompt(benchmark::State& state) {
  auto tok = load();
  auto chat = tok->chat_template();
  const std::string text = *chat->render({{"user", "Tell me about Richard Feynman.", std::nullopt}}, ChatOptions{});
  for (auto _ : state) benchmark::DoNotOptimize(tok->encode_text(text, false)->data());
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
}

BENCHMARK(BM_EncodeEnglishCached)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeEnglishUncached)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeMultilingualCached)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeMultilingualUncached)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeChatPrompt)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace samebits

BENCHMARK_MAIN();
