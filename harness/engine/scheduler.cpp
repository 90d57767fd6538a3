#include "harness/engine/scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace samebits {

Scheduler::Scheduler(const SchedulerConfig& config)
    : config_(config), blocks_(config.num_blocks, config.block_size), cache_(blocks_) {}

std::string Scheduler::rejection_reason(const RequestSpec& spec) const {
  const int64_t prompt = int64_t(spec.prompt.size());
  if (requests_.contains(spec.id)) return absl::StrCat("request id ", spec.id, " is already queued or running");
  if (prompt == 0) return "the prompt is empty";
  if (spec.max_new_tokens < 1) return absl::StrCat("max_new_tokens: ", spec.max_new_tokens, " is not a positive integer");
  for (size_t i = 0; i < spec.prompt.size(); ++i) {
    if (spec.prompt[i] < 0 || spec.prompt[i] >= config_.vocab_size) {
      return absl::StrCat("prompt token ", i, ": id ", spec.prompt[i], " is outside the vocabulary [0, ",
                          config_.vocab_size, ")");
    }
  }
  const int64_t total = prompt + spec.max_new_tokens;
  if (total > config_.max_model_len) {
    return absl::StrCat("prompt of ", prompt, " tokens + max_new_tokens ", spec.max_new_tokens,
                        " exceeds the model context of ", config_.max_model_len, " positions");
  }
  // The last sampled token never enters the cache.
  const int64_t blocks_needed = blocks_.blocks_for(total - 1);
  if (blocks_needed > config_.num_blocks) {
    return absl::StrCat("needs ", blocks_needed, " KV blocks (", total - 1, " tokens at block size ",
                        config_.block_size, ") but the cache has ", config_.num_blocks);
  }
  const SamplingParams& s = spec.sampling;
  if (!(s.temperature >= 0.f) || !std::isfinite(s.temperature)) {
    return absl::StrCat("sampling.temperature: ", s.temperature, " is not a finite number >= 0");
  }
  if (s.top_k < 0) return absl::StrCat("sampling.top_k: ", s.top_k, " is negative");
  if (!(s.top_p > 0.f && s.top_p <= 1.f)) return absl::StrCat("sampling.top_p: ", s.top_p, " is not in (0, 1]");
  for (size_t i = 0; i < spec.stop_sequences.size(); ++i) {
    if (spec.stop_sequences[i].empty()) return absl::StrCat("stop_sequences[", i, "] is empty");
  }
  return "";
}

void Scheduler::add(RequestSpec spec) {
  std::string why = rejection_reason(spec);
  if (!why.empty()) {
    RequestResult result;
    result.id = spec.id;
    result.reason = FinishReason::kRejected;
    result.reject_reason = std::move(why);
    finished_.push_back(std::move(result));
    ++stats_.rejected;
    return;
  }
  auto r = std::make_unique<Request>();
  r->tokens = spec.prompt;
  r->tokens.reserve(spec.prompt.size() + size_t(spec.max_new_tokens));
  r->prompt_len = int(spec.prompt.size());
  r->spec = std::move(spec);
  Request* raw = r.get();
  requests_.emplace(raw->spec.id, std::move(r));
  waiting_.push_back(raw);
}

int Scheduler::chunk_limit(int remaining, int budget) const {
  int n = std::min(remaining, budget);
  if (config_.max_chunk > 0) n = std::min(n, config_.max_chunk);
  return n;
}

void Scheduler::push_entry(Request* r, int n, ScheduleOutput* out, int* budget) {
  ScheduledEntry e;
  e.request = r;
  e.start = r->num_computed;
  e.num_tokens = n;
  e.samples = r->num_computed + n == r->num_tokens();
  out->entries.push_back(e);
  r->scheduled_step = out->step;
  r->scheduled_tokens = n;
  *budget -= n;
}

void Scheduler::release_blocks(Request* r) {
  // Last block first: of a freed chain, the tail is the least likely to be shared, so it should
  // be evicted first.
  for (auto it = r->blocks.rbegin(); it != r->blocks.rend(); ++it) blocks_.release(*it);
  r->blocks.clear();
  r->num_registered_blocks = 0;
}

void Scheduler::remove_running(Request* r) {
  auto it = std::find(running_.begin(), running_.end(), r);
  if (it != running_.end()) running_.erase(it);
}

void Scheduler::preempt(Request* r, ScheduleOutput* out, int* budget) {
  if (r->scheduled_step == out->step) {
    auto it = std::find_if(out->entries.begin(), out->entries.end(),
                           [r](const ScheduledEntry& e) { return e.request == r; });
    if (it != out->entries.end()) {
      *budget += it->num_tokens;
      out->entries.erase(it);
    }
    r->scheduled_step = -1;
  }
  release_blocks(r);
  r->num_computed = 0;
  r->state = RequestState::kWaiting;
  remove_running(r);
  waiting_.push_front(r);
  ++r->preemptions;
  ++stats_.preemptions;
  out->preempted.push_back(r->spec.id);
}

bool Scheduler::reserve_blocks(Request* r, int tokens, ScheduleOutput* out, int* budget) {
  const int need = blocks_.blocks_for(tokens) - int(r->blocks.size());
  while (need > blocks_.num_free()) {
    Request* victim = running_.back();
    preempt(victim, out, budget);
    if (victim == r) return false;
  }
  for (int i = 0; i < need; ++i) r->blocks.push_back(blocks_.allocate());
  return true;
}

bool Scheduler::try_admit(Request* r, ScheduleOutput* out, int* budget) {
  // Only a request preempted in this very step can wait with a pending token, and such a step
  // admits nobody; its prefix hashes would cover the placeholder.
  if (r->token_pending) return false;
  const int total = r->num_tokens();
  std::vector<int32_t> hit;
  if (config_.prefix_cache) {
    PrefixCache::extend_hashes(r->tokens, config_.block_size, &r->block_hashes);
    // At least one token must be computed: its logits give the next token.
    hit = cache_.match(r->tokens, r->block_hashes, (total - 1) / config_.block_size);
  }
  const int hit_tokens = int(hit.size()) * config_.block_size;
  const int n = chunk_limit(total - hit_tokens, *budget);
  if (n <= 0) return false;
  const int need_new = blocks_.blocks_for(hit_tokens + n) - int(hit.size());
  int evictable_hits = 0;
  for (int32_t b : hit) evictable_hits += blocks_.ref_count(b) == 0 ? 1 : 0;
  if (need_new + evictable_hits > blocks_.num_free()) return false;

  admit(r, std::move(hit), out);
  for (int i = 0; i < need_new; ++i) r->blocks.push_back(blocks_.allocate());
  push_entry(r, n, out, budget);
  return true;
}

void Scheduler::admit(Request* r, std::vector<int32_t> hit, ScheduleOutput* out) {
  const int hit_tokens = int(hit.size()) * config_.block_size;
  for (int32_t b : hit) blocks_.acquire(b);
  r->blocks = std::move(hit);
  r->num_computed = hit_tokens;
  r->num_registered_blocks = int(r->blocks.size());
  r->prefix_hit_tokens = hit_tokens;
  if (hit_tokens > 0) {
    stats_.prefix_hit_tokens += hit_tokens;
    ++stats_.prefix_hit_requests;
  }
  r->state = RequestState::kRunning;
  r->admit_order = ++admit_counter_;
  running_.push_back(r);
  out->admitted.push_back(r->spec.id);
}

ScheduleOutput Scheduler::schedule() {
  ScheduleOutput out;
  out.step = step_counter_++;
  int budget = config_.max_tokens_per_step;

  // Running requests: decodes (one token left) first, then prefills, each in admission order.
  // running_ only shrinks at its back (preemption) or at the current index (self-preemption),
  // so the index walk stays valid.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
      Request* r = running_[i];
      const int remaining = r->num_tokens() - r->num_computed;
      if ((pass == 0) != (remaining == 1) || r->scheduled_step == out.step) continue;
      const int n = chunk_limit(remaining, budget);
      if (!reserve_blocks(r, r->num_computed + n, &out, &budget)) continue;
      push_entry(r, n, &out, &budget);
    }
  }

  // Waiting requests, in arrival order (preempted ones first), unless this step had to preempt.
  if (out.preempted.empty()) {
    while (!waiting_.empty() && budget > 0 && int(running_.size()) < config_.max_seqs) {
      if (!try_admit(waiting_.front(), &out, &budget)) break;
      waiting_.pop_front();
    }
  }
  for (const ScheduledEntry& e : out.entries) out.num_tokens += e.num_tokens;
  return out;
}

StepRecord Scheduler::record_of(const ScheduleOutput& out) const {
  StepRecord record;
  record.index = out.step;
  record.preempted = out.preempted;
  record.admitted = out.admitted;
  record.entries.reserve(out.entries.size());
  for (const ScheduledEntry& e : out.entries) {
    StepRecord::Entry entry;
    entry.request_id = e.request->spec.id;
    entry.start_position = e.start;
    entry.num_tokens = e.num_tokens;
    entry.samples = e.samples;
    entry.blocks = e.request->blocks;
    record.entries.push_back(std::move(entry));
  }
  return record;
}

void Scheduler::commit(const ScheduleOutput& out) {
  for (const ScheduledEntry& e : out.entries) {
    Request* r = e.request;
    r->num_computed += e.num_tokens;
    if (!config_.prefix_cache) continue;
    const int full = r->num_computed / config_.block_size;
    if (full <= r->num_registered_blocks) continue;
    PrefixCache::extend_hashes(r->tokens, config_.block_size, &r->block_hashes);
    for (int i = r->num_registered_blocks; i < full; ++i) {
      cache_.insert(r->tokens, r->block_hashes, i, r->blocks[size_t(i)]);
    }
    r->num_registered_blocks = full;
  }
}

FinishReason Scheduler::finish_reason_after(const Request& r, int32_t token) const {
  if (r.spec.stop_at_eos && config_.eos_token_id >= 0 && token == config_.eos_token_id) return FinishReason::kEos;
  // `token` takes the placeholder's place if there is one.
  const auto known_end = r.tokens.end() - std::ptrdiff_t(r.token_pending);
  const int generated = r.num_generated() - int(r.token_pending) + 1;
  for (const auto& stop : r.spec.stop_sequences) {
    // The stop sequence ends with `token`, the rest with the tokens generated before it.
    if (int(stop.size()) <= generated && stop.back() == token &&
        std::equal(stop.begin(), stop.end() - 1, known_end - std::ptrdiff_t(stop.size() - 1))) {
      return FinishReason::kStopSequence;
    }
  }
  return generated >= r.spec.max_new_tokens ? FinishReason::kMaxTokens : FinishReason::kRunning;
}

FinishReason Scheduler::append_token(Request* r, int32_t token) {
  const FinishReason reason = finish_reason_after(*r, token);  // r has no placeholder here
  r->tokens.push_back(token);
  if (reason != FinishReason::kRunning) finish(r, reason);
  return reason;
}

Scheduler::Outlook Scheduler::outlook(const ScheduleOutput& out) const {
  Outlook o;
  int sampling = 0;  // entries that sample: every entry's request is running
  for (const ScheduledEntry& e : out.entries) {
    if (!e.samples) continue;
    ++sampling;
    const Request& r = *e.request;
    if (r.num_generated() + 1 >= r.spec.max_new_tokens) continue;  // finishes by its count
    const bool may_stop_on_value = (r.spec.stop_at_eos && config_.eos_token_id >= 0) || !r.spec.stop_sequences.empty();
    if (may_stop_on_value) {
      o.exact = false;
    } else {
      o.work_remains = true;
    }
  }
  // Running requests that do not sample in `out` continue, as do waiting ones.
  if (int(running_.size()) > sampling || !waiting_.empty()) o.work_remains = true;
  return o;
}

void Scheduler::expect_token(Request* r, int32_t row) {
  const bool last = r->num_generated() + 1 >= r->spec.max_new_tokens;
  r->tokens.push_back(kPendingToken);
  r->token_pending = true;
  r->pending_row = row;
  if (!last) return;
  release_blocks(r);
  remove_running(r);
  r->state = RequestState::kFinishing;
}

FinishReason Scheduler::resolve_token(Request* r, int32_t token) {
  r->tokens.pop_back();
  r->token_pending = false;
  r->pending_row = -1;
  return append_token(r, token);
}

void Scheduler::finish(Request* r, FinishReason reason) {
  release_blocks(r);
  remove_running(r);
  // A request preempted while its token was pending may finish from the queue.
  if (auto w = std::find(waiting_.begin(), waiting_.end(), r); w != waiting_.end()) waiting_.erase(w);
  RequestResult result;
  result.id = r->spec.id;
  result.tokens.assign(r->tokens.begin() + r->prompt_len, r->tokens.end());
  result.reason = reason;
  result.preemptions = r->preemptions;
  result.prefix_hit_tokens = r->prefix_hit_tokens;
  finished_.push_back(std::move(result));
  requests_.erase(r->spec.id);  // frees r
}

bool Scheduler::cancel(uint64_t request_id) {
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return false;
  finish(it->second.get(), FinishReason::kCancelled);
  return true;
}

std::vector<RequestResult> Scheduler::take_finished() {
  std::vector<RequestResult> out;
  out.swap(finished_);
  return out;
}

std::string Scheduler::check_invariants() const {
  if (std::string s = blocks_.check_invariants(); !s.empty()) return s;
  if (std::string s = cache_.check_invariants(); !s.empty()) return s;
  if (int(running_.size()) > config_.max_seqs) {
    return absl::StrCat(running_.size(), " running requests exceed max_seqs ", config_.max_seqs);
  }
  std::vector<int32_t> owners(size_t(blocks_.num_blocks()), 0);
  for (const Request* r : running_) {
    if (int(r->blocks.size()) != blocks_.blocks_for(r->num_computed)) {
      return absl::StrCat("request ", r->spec.id, " holds ", r->blocks.size(), " blocks for ", r->num_computed,
                          " computed tokens");
    }
    for (size_t j = 0; j < r->blocks.size(); ++j) {
      const int32_t b = r->blocks[j];
      if (b < 0 || b >= blocks_.num_blocks()) return absl::StrCat("request ", r->spec.id, " holds invalid block ", b);
      ++owners[size_t(b)];
      // A block still being filled belongs to its writer alone and is not shared through the cache.
      const bool partial = int64_t(j + 1) * config_.block_size > r->num_computed;
      if (partial && (blocks_.ref_count(b) != 1 || blocks_.is_cached(b))) {
        return absl::StrCat("block ", b, " of request ", r->spec.id, " is being written but has ",
                            blocks_.ref_count(b), " references (cached ", blocks_.is_cached(b), ")");
      }
    }
  }
  for (const Request* r : waiting_) {
    if (!r->blocks.empty()) return absl::StrCat("waiting request ", r->spec.id, " holds blocks");
  }
  for (int b = 0; b < blocks_.num_blocks(); ++b) {
    if (owners[size_t(b)] != blocks_.ref_count(b)) {
      return absl::StrCat("block ", b, " has reference count ", blocks_.ref_count(b), " but ", owners[size_t(b)],
                          " owners");
    }
    if (owners[size_t(b)] > 1 && !blocks_.is_cached(b)) {
      return absl::StrCat("block ", b, " has ", owners[size_t(b)], " owners but is not a cached block");
    }
  }
  return "";
}

}  // namespace samebits
