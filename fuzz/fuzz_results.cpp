// Results JSON (what `compare` reads): any bytes give RunResults or one error line; results that
// read back are compared with themselves (no differences) and rendered as table, Markdown and JUnit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/input_file.h"
#include "harness/golden/results.h"
#include "harness/report/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j;
  if (!samebits::parse_json_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json", &j).ok())
    return 0;
  auto r = samebits::results_from_json(j, "fuzz.json");
  if (!r.ok()) return 0;
  for (const samebits::ComparisonLine& line : samebits::compare_results(*r, *r))
    if (line.samples_differing != 0) std::abort();
  (void)samebits::format_table(*r);
  (void)samebits::format_markdown(*r);
  (void)samebits::format_junit(*r);
  (void)samebits::json_text(samebits::results_to_json(*r));
  return 0;
}
