// The input format of fuzz_tokenizer (and of its seeds, which the model tests load): the files'
// text separated by NUL bytes, which cannot occur in JSON:
//   tokenizer.json [\0 tokenizer_config.json [\0 chat_template.jinja]]
#pragma once
#include <string>
#include <string_view>

#include "models/tiny_qwen/bpe_tokenizer.h"

namespace samebits {

inline TokenizerFiles split_tokenizer_input(std::string_view input) {
  TokenizerFiles files;
  files.dir = "checkpoint";
  const size_t config_at = input.find('\0');
  files.tokenizer_json = std::string(input.substr(0, config_at));
  if (config_at != std::string_view::npos) {
    const std::string_view rest = input.substr(config_at + 1);
    const size_t jinja_at = rest.find('\0');
    files.tokenizer_config_json = std::string(rest.substr(0, jinja_at));
    if (jinja_at != std::string_view::npos) files.chat_template_jinja = std::string(rest.substr(jinja_at + 1));
  }
  return files;
}

}  // namespace samebits
