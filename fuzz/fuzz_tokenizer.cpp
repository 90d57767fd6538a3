// A checkpoint's tokenizer files (tokenizer.json, tokenizer_config.json, chat_template.jinja, as
// BpeTokenizer::load reads them from a model hub's folder): any bytes give a tokenizer or one
// error line. The input: the files' text separated by NUL bytes (fuzz/tokenizer_input.h). A
// tokenizer that loads then encodes a few texts (added tokens, NFC, the pre-tokenizer's splits, merges), every id within its
// vocabulary, decodes them, and renders a conversation when its chat template is recognised.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/tokenizer_input.h"
#include "models/tiny_qwen/bpe_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace samebits;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const TokenizerFiles files = split_tokenizer_input(input);
  auto tokenizer = BpeTokenizer::from_files(files);
  if (!tokenizer.ok()) return 0;
  BpeTokenizer& t = **tokenizer;
  t.set_piece_cache(false);  // no state carried from one input to the next
  for (const char* text : {"Hello world, it's 2026!  \n\tcaf\xc3\xa9 e\xcc\x81 \xe4\xb8\xad 123", "<|im_start|>user\nhi<|im_end|>",
                           " <think>\n\n</think> x"}) {
    auto ids = t.encode_text(text, true);
    if (!ids.ok()) std::abort();  // valid UTF-8 always encodes
    for (int32_t id : *ids)
      if (id < 0 || id >= t.vocab_size()) std::abort();
    (void)t.decode(*ids, true);
    (void)t.decode(*ids, false);
  }
  if (auto chat = t.chat_template(); chat.ok()) {
    auto text = chat->render({{"system", "be brief", std::nullopt}, {"user", "hi", std::nullopt}}, ChatOptions{});
    if (!text.ok()) std::abort();
    (void)t.encode_text(*text, false);
  }
  return 0;
}
