// KV-cache write through a slot mapping, on the CPU. Both modes: a plain copy of each token's K and
// V rows into slot slot_mapping[t] of the paged caches (no arithmetic, so nothing to order). Slot -1
// skips the token (padding). All slots are checked before anything is written, so a bad mapping
// leaves the caches untouched. Tokens are copied in index order by one thread: a copy this small is
// bound by memory, and a mapping that names one slot twice still gets a defined result (last wins).
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"

namespace samebits {

absl::Status cpu_kv_write(const ExecContext& /*ctx*/, const KvWriteArgs& args) {
  auto invalid = [](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("kv_write: ", what));
  };
  if (args.T < 0) return invalid(absl::StrCat("T = ", args.T, " is negative"));
  if (args.num_kv_heads <= 0) return invalid(absl::StrCat("num_kv_heads = ", args.num_kv_heads, " is not positive"));
  if (args.head_dim <= 0) return invalid(absl::StrCat("head_dim = ", args.head_dim, " is not positive"));
  if (args.T == 0) return absl::OkStatus();
  if (!args.k || !args.v) return invalid(args.k ? "v is null" : "k is null");
  if (!args.slot_mapping) return invalid("slot_mapping is null");
  if (!args.k_cache || !args.v_cache) return invalid(args.k_cache ? "v_cache is null" : "k_cache is null");
  for (int64_t t = 0; t < args.T; ++t) {
    const int64_t slot = args.slot_mapping[t];
    if (slot < -1 || slot >= args.num_slots) {
      return invalid(absl::StrCat("token ", t, ": slot_mapping = ", slot, " is outside [-1, num_slots = ",
                                  args.num_slots, ")"));
    }
  }
  const int64_t row = int64_t(args.num_kv_heads) * args.head_dim;
  const size_t row_bytes = size_t(row) * sizeof(bf16);
  for (int64_t t = 0; t < args.T; ++t) {
    const int64_t slot = args.slot_mapping[t];
    if (slot < 0) continue;
    std::memcpy(args.k_cache + slot * row, args.k + t * row, row_bytes);
    std::memcpy(args.v_cache + slot * row, args.v + t * row, row_bytes);
  }
  return absl::OkStatus();
}

}  // namespace samebits
