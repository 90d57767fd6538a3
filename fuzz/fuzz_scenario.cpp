// Scenario YAML: any bytes give a Scenario or one error line, never a crash or a hang. A valid
// scenario of modest size is also turned into its engine configuration and seeded workload.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "harness/scenario/scenario.h"
#include "harness/scenario/workload.h"
#include "models/tiny_qwen/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto s = samebits::parse_scenario(text, "fuzz.yaml");
  if (!s.ok()) return 0;
  (void)samebits::engine_config(*s, 1, samebits::Mode::kInvariant);
  if (s->samples <= 64 && s->mix.background <= 256) {
    const samebits::ByteTokenizer bytes;  // the built-in checkpoint's tokenizer
    (void)samebits::generate_workload(*s, bytes);
  }
  return 0;
}
