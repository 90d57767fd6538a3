// Qwen2.5 and Qwen3 chat templates rendered as transformers renders their Jinja (see the header).
// Each render function follows its template statement by statement; the comments quote the
// template's logic where it is not obvious.
#include "models/tiny_qwen/chat_template.h"

#include <xxhash.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace samebits {
namespace {

// Digests of Qwen's shipped templates (whitespace removed): Qwen2.5-Instruct and Qwen3.
constexpr uint64_t kQwen2_5Digest = 0x4702192ed19c2830ull;
constexpr uint64_t kQwen3Digest = 0x018186641bc737beull;

constexpr char kImStart[] = "<|im_start|>";
constexpr char kImEnd[] = "<|im_end|>\n";
constexpr char kQwen2_5DefaultSystem[] = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

// Python's str.strip('\n') family.
std::string_view lstrip_newlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}
std::string_view rstrip_newlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

absl::Status check_roles(const std::vector<ChatMessage>& messages) {
  if (messages.empty()) return absl::InvalidArgumentError("messages: the conversation is empty");
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant") {
      return absl::InvalidArgumentError(absl::StrCat(
          "messages[", i, "].role: '", role, "' is not supported (system, user, assistant; tools are not supported)"));
    }
  }
  return absl::OkStatus();
}

std::string render_qwen2_5(const std::vector<ChatMessage>& messages, const ChatOptions& options) {
  std::string out = kImStart;
  out += "system\n";
  out += messages[0].role == "system" ? messages[0].content : kQwen2_5DefaultSystem;
  out += kImEnd;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "system" && i == 0) continue;  // rendered above
    absl::StrAppend(&out, kImStart, m.role, "\n", m.content, kImEnd);
  }
  if (options.add_generation_prompt) absl::StrAppend(&out, kImStart, "assistant\n");
  return out;
}

std::string render_qwen3(const std::vector<ChatMessage>& messages, const ChatOptions& options) {
  std::string out;
  if (messages[0].role == "system") absl::StrAppend(&out, kImStart, "system\n", messages[0].content, kImEnd);
  // last_query_index: the last user message that is not a tool response.
  size_t last_query = messages.size() - 1;
  for (size_t k = messages.size(); k-- > 0;) {
    const std::string& c = messages[k].content;
    if (messages[k].role == "user" &&
        !(absl::StartsWith(c, "<tool_response>") && absl::EndsWith(c, "</tool_response>"))) {
      last_query = k;
      break;
    }
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i != 0)) {
      absl::StrAppend(&out, kImStart, m.role, "\n", m.content, kImEnd);
      continue;
    }
    if (m.role != "assistant") continue;
    std::string_view content = m.content;
    std::string reasoning;
    if (m.reasoning_content) {
      reasoning = *m.reasoning_content;
    } else if (const size_t close = content.find("</think>"); close != std::string_view::npos) {
      // content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')
      std::string_view before = rstrip_newlines(content.substr(0, close));
      if (const size_t open = before.rfind("<think>"); open != std::string_view::npos) before.remove_prefix(open + 7);
      reasoning = std::string(lstrip_newlines(before));
      // content.split('</think>')[-1].lstrip('\n')
      content = lstrip_newlines(content.substr(content.rfind("</think>") + 8));
    }
    const bool last = i + 1 == messages.size();
    if (i > last_query && (last || !reasoning.empty())) {
      absl::StrAppend(&out, kImStart, "assistant\n<think>\n", std::string(rstrip_newlines(lstrip_newlines(reasoning))),
                      "\n</think>\n\n", std::string(lstrip_newlines(content)));
    } else {
      absl::StrAppend(&out, kImStart, "assistant\n", std::string(content));
    }
    out += kImEnd;
  }
  if (options.add_generation_prompt) {
    absl::StrAppend(&out, kImStart, "assistant\n");
    if (options.enable_thinking == false) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

}  // namespace

uint64_t chat_template_digest(std::string_view jinja) {
  std::string compact;
  compact.reserve(jinja.size());
  for (char c : jinja)
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') compact.push_back(c);
  return XXH3_64bits(compact.data(), compact.size());
}

absl::StatusOr<ChatTemplate> ChatTemplate::recognise(std::string_view jinja, const std::string& origin) {
  const uint64_t digest = chat_template_digest(jinja);
  if (digest == kQwen2_5Digest) return ChatTemplate(ChatTemplateKind::kQwen2_5);
  if (digest == kQwen3Digest) return ChatTemplate(ChatTemplateKind::kQwen3);
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: not a chat template samebits renders (digest %016x; supported: Qwen2.5 and Qwen3 ChatML as "
      "Qwen ships them); give the scenario's prompt as text or prompt_tokens instead of messages",
      origin, digest));
}

std::string_view ChatTemplate::name() const {
  return kind_ == ChatTemplateKind::kQwen3 ? "Qwen3 ChatML" : "Qwen2.5 ChatML";
}

absl::StatusOr<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                                 const ChatOptions& options) const {
  if (absl::Status s = check_roles(messages); !s.ok()) return s;
  return kind_ == ChatTemplateKind::kQwen3 ? render_qwen3(messages, options) : render_qwen2_5(messages, options);
}

}  // namespace samebits
