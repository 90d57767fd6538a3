// Trace JSON (what `replay` reads): any bytes give a Trace or one error line; a trace that reads
// back is written and read again, and must come back the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/input_file.h"
#include "harness/scenario/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j;
  if (!samebits::parse_json_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json", &j).ok())
    return 0;
  auto t = samebits::trace_from_json(j, "fuzz.json");
  if (!t.ok()) return 0;
  const std::string text = samebits::json_text(samebits::trace_to_json(*t));
  nlohmann::json again;
  if (!samebits::parse_json_text(text, "again.json", &again).ok()) std::abort();
  auto back = samebits::trace_from_json(again, "again.json");
  if (!back.ok() || samebits::json_text(samebits::trace_to_json(*back)) != text) std::abort();
  return 0;
}
