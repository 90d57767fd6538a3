// A checkpoint's config.json: any bytes give a model configuration or one error line.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "models/tiny_qwen/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)samebits::parse_hf_config(std::string_view(reinterpret_cast<const char*>(data), size), "config.json");
  return 0;
}
