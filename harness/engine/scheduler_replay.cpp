// Replay: the step a StepRecord describes, checked against the scheduler's state. A recorded
// schedule replays exactly when the same requests arrive before the same steps; every divergence
// (unknown request, position, block in use, missing prefix-cache hit) is an error saying where.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "harness/engine/scheduler.h"

namespace samebits {
namespace {

absl::Status diverged(int64_t step, uint64_t id, const std::string& what) {
  return absl::FailedPreconditionError(absl::StrCat("replay: step ", step, ", request ", id, ": ", what));
}

}  // namespace

absl::StatusOr<ScheduleOutput> Scheduler::schedule_forced(const StepRecord& record) {
  ScheduleOutput out;
  out.step = step_counter_++;
  int budget = std::numeric_limits<int>::max() / 2;  // the record decides, not the budget

  for (uint64_t id : record.preempted) {
    auto it = requests_.find(id);
    if (it == requests_.end() || it->second->state != RequestState::kRunning) {
      return diverged(record.index, id, "recorded as preempted but not running");
    }
    preempt(it->second.get(), &out, &budget);
  }
  for (const StepRecord::Entry& entry : record.entries) {
    auto it = requests_.find(entry.request_id);
    if (it == requests_.end()) return diverged(record.index, entry.request_id, "unknown or finished request");
    Request* r = it->second.get();
    const int bs = config_.block_size;
    if (r->state == RequestState::kWaiting) {
      if (std::find(record.admitted.begin(), record.admitted.end(), r->spec.id) == record.admitted.end()) {
        return diverged(record.index, r->spec.id, "waiting, but the record does not admit it");
      }
      const int hit_tokens = entry.start_position;
      if (hit_tokens % bs != 0 || hit_tokens >= r->num_tokens() || hit_tokens < 0) {
        return diverged(record.index, r->spec.id, absl::StrCat("admitted at position ", hit_tokens,
                                                               ", not a block-aligned prefix-cache hit"));
      }
      const size_t hit_blocks = size_t(hit_tokens / bs);
      if (entry.blocks.size() < hit_blocks) return diverged(record.index, r->spec.id, "block table shorter than its hit");
      std::vector<int32_t> hit;
      if (hit_blocks > 0) {
        if (!config_.prefix_cache) return diverged(record.index, r->spec.id, "prefix-cache hit with the cache off");
        PrefixCache::extend_hashes(r->tokens, bs, &r->block_hashes);
        hit = cache_.match(r->tokens, r->block_hashes, int(hit_blocks));
        if (hit.size() != hit_blocks || !std::equal(hit.begin(), hit.end(), entry.blocks.begin())) {
          return diverged(record.index, r->spec.id,
                          absl::StrCat("recorded prefix hit [", absl::StrJoin(entry.blocks.begin(),
                                                                              entry.blocks.begin() + std::ptrdiff_t(hit_blocks), ","),
                                       "] but the cache holds [", absl::StrJoin(hit, ","), "]"));
        }
      }
      waiting_.erase(std::find(waiting_.begin(), waiting_.end(), r));
      admit(r, std::move(hit), &out);
    }
    if (r->scheduled_step == out.step) return diverged(record.index, r->spec.id, "scheduled twice in one step");
    if (entry.start_position != r->num_computed) {
      return diverged(record.index, r->spec.id, absl::StrCat("recorded start ", entry.start_position, " but ",
                                                             r->num_computed, " tokens are computed"));
    }
    const int end = entry.start_position + entry.num_tokens;
    if (entry.num_tokens < 1 || end > r->num_tokens()) {
      return diverged(record.index, r->spec.id, absl::StrCat("recorded ", entry.num_tokens, " tokens from ",
                                                             entry.start_position, " but it has ", r->num_tokens()));
    }
    if (entry.samples != (end == r->num_tokens())) return diverged(record.index, r->spec.id, "sampling flag differs");
    if (int(entry.blocks.size()) != blocks_.blocks_for(end) ||
        !std::equal(r->blocks.begin(), r->blocks.end(), entry.blocks.begin())) {
      return diverged(record.index, r->spec.id, "recorded block table does not extend the current one");
    }
    for (size_t j = r->blocks.size(); j < entry.blocks.size(); ++j) {
      if (!blocks_.take(entry.blocks[j])) {
        return diverged(record.index, r->spec.id, absl::StrCat("block ", entry.blocks[j], " is not free"));
      }
      r->blocks.push_back(entry.blocks[j]);
    }
    push_entry(r, entry.num_tokens, &out, &budget);
  }
  for (const ScheduledEntry& e : out.entries) out.num_tokens += e.num_tokens;
  return out;
}

}  // namespace samebits
