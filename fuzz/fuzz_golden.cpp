// Golden JSON: any bytes give a Golden or one error line; a golden that reads back is written
// and read again, and must come back the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/input_file.h"
#include "harness/golden/golden_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j;
  if (!samebits::parse_json_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json", &j).ok())
    return 0;
  auto g = samebits::golden_from_json(j, "fuzz.json");
  if (!g.ok()) return 0;
  const std::string text = samebits::json_text(samebits::golden_to_json(*g));
  nlohmann::json again;
  if (!samebits::parse_json_text(text, "again.json", &again).ok()) std::abort();
  auto back = samebits::golden_from_json(again, "again.json");
  if (!back.ok() || samebits::json_text(samebits::golden_to_json(*back)) != text) std::abort();
  return 0;
}
