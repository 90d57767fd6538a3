// Chat templates of Qwen checkpoints. tokenizer_config.json's chat_template is Jinja; samebits
// does not interpret Jinja. It recognises the templates Qwen2.5 and Qwen3 ship (by a digest of the
// template text with all whitespace removed, so indentation and line ends do not matter) and
// renders them exactly as transformers' apply_chat_template does for conversations of system,
// user and assistant messages (fixtures: models/tiny_qwen/fixtures/chat_cases.json). Any other
// template, and tools or tool messages, are refused with a clear error: give the prompt as text or
// token ids instead.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace samebits {

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
  std::optional<std::string> reasoning_content;  // assistant turns (Qwen3 renders it as <think>)
};

struct ChatOptions {
  bool add_generation_prompt = true;
  std::optional<bool> enable_thinking;  // unset: as transformers without the argument
};

enum class ChatTemplateKind { kQwen2_5, kQwen3 };

class ChatTemplate {
 public:
  // `origin` names the file and field in errors ("DIR/tokenizer_config.json: chat_template").
  static absl::StatusOr<ChatTemplate> recognise(std::string_view jinja, const std::string& origin);
  explicit ChatTemplate(ChatTemplateKind kind) : kind_(kind) {}

  ChatTemplateKind kind() const { return kind_; }
  std::string_view name() const;  // "Qwen2.5 ChatML", "Qwen3 ChatML"
  // Errors name the message index and field (unsupported role, no messages).
  absl::StatusOr<std::string> render(const std::vector<ChatMessage>& messages, const ChatOptions& options) const;

 private:
  ChatTemplateKind kind_;
};

// Digest by which templates are recognised: XXH3-64 of the text without whitespace.
uint64_t chat_template_digest(std::string_view jinja);

}  // namespace samebits
