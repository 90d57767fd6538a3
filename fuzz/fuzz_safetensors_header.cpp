// A safetensors JSON header: any bytes give a checked tensor table or one error line. The first
// 8 bytes are the data section's size (as in the file, little-endian), the rest the header.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "models/tiny_qwen/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t data_bytes = 0;
  std::memcpy(&data_bytes, data, 8);
  (void)samebits::parse_safetensors_header(std::string_view(reinterpret_cast<const char*>(data) + 8, size - 8),
                                           data_bytes, "model.safetensors");
  return 0;
}
