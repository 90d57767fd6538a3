// The HTTP request parser of `samebits serve` (a pure function: body bytes in, a generation
// request or an OpenAI error out): any bytes give one or the other, never a crash. The first
// byte picks the endpoint (completions or chat), the rest is the body.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

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
  if (const ApiError* error = std::get_if<ApiError>(&parsed)) (void)error_json(*error).dump();
  return 0;
}
