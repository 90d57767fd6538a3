// The HTTP request parser of `samebits serve` (a pure function: body bytes in, a generation
// request or an OpenAI error out): any bytes give one or the other, never a crash. The first
// byte picks the endpoint (completions or chat), the rest is the body. Errors are 400 or 404; a
// request that passes respects every limit (prompt ids in the vocabulary, prompt + max_tokens
// within the context, n, logprobs and stop counts).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "common/input_file.h"
#include "harness/serve/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  using namespace samebits::serve;
  static const RequestLimits limits = [] {
    RequestLimits l;
    l.model_names = {"samebits", "builtin"};
    return l;
  }();
  const Api api = data[0] % 2 ? Api::kChat : Api::kCompletions;
  ParsedRequest parsed =
      parse_generation_request(api, std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), limits);
  if (const ApiError* error = std::get_if<ApiError>(&parsed)) {
    // Bad input is the client's fault: 400 or 404 (unknown model), never a server error.
    if (error->status != 400 && error->status != 404) std::abort();
    (void)samebits::json_text(error_json(*error));  // as the server sends it (invalid UTF-8 replaced)
    return 0;
  }
  // What reaches the engine respects the limits.
  const GenerationRequest& r = std::get<GenerationRequest>(parsed);
  if (r.prompt.empty() || r.max_tokens < 1 || int(r.prompt.size()) + r.max_tokens > limits.max_model_len) std::abort();
  for (int32_t t : r.prompt)
    if (t < 0 || t >= limits.vocab_size) std::abort();
  if (r.n < 1 || r.n > limits.max_n || r.logprobs > limits.max_top_logprobs || int(r.stop.size()) > limits.max_stop) std::abort();
  return 0;
}
