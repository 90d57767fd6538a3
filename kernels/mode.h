// The two kernel modes that every op implements side by side.
#pragma once
#include <optional>
#include <string_view>

namespace samebits {

enum class Mode {
  // Reduction strategy follows the batch shape (split-K, split row reductions, split-KV count),
  // as production libraries do. Same batch, same bits; different batch, different bits.
  kDefault,
  // One fixed reduction order per row and per query token, whatever else is in the batch.
  kInvariant,
};

constexpr std::string_view mode_name(Mode m) { return m == Mode::kDefault ? "default" : "invariant"; }

inline std::optional<Mode> parse_mode(std::string_view s) {
  if (s == "default") return Mode::kDefault;
  if (s == "invariant") return Mode::kInvariant;
  return std::nullopt;
}

}  // namespace samebits
