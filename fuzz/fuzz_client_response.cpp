// Client mode's reading of another server's answers (harness/client/response_parse.h): any bytes
// give a record or one error, never a crash. The first byte picks what the rest is:
//   bits 0-1: 0 a completion body, 1 a chat completion body, 2 a server-sent-event stream,
//             3 a GET /models body (the model "m" looked up);
//   bit 2:    the stream's API (completions or chat);
//   bits 3-7: the stream is fed in pieces of this many bytes plus one (events split anywhere).
// A stream that reads is finished; every record's token ids are non-negative.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "harness/client/response_parse.h"

namespace {

void check(const absl::StatusOr<samebits::client::ChoiceRecord>& choice) {
  if (!choice.ok()) return;
  for (const samebits::client::TokenRecord& t : choice->tokens) {
    if (t.id && *t.id < 0) std::abort();
    (void)samebits::client::returned_step_digest(t);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace samebits::client;
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (mode & 3) {
    case 0:
      check(parse_choice_body(Api::kCompletions, body));
      break;
    case 1:
      check(parse_choice_body(Api::kChat, body));
      break;
    case 2: {
      StreamReader stream(mode & 4 ? Api::kChat : Api::kCompletions);
      const size_t piece = size_t(mode >> 3) + 1;
      absl::Status status;
      for (size_t at = 0; at < body.size() && status.ok(); at += piece)
        status = stream.feed(body.substr(at, std::min(piece, body.size() - at)));
      if (status.ok()) check(stream.finish());
      break;
    }
    default:
      (void)parse_model_list(body, "m");
  }
  return 0;
}
