// Divergence localisation: which pairs to explain, the capture of the watched requests' rows during
// a replay, and the comparison of two captures. See explain.h.
#include "harness/explain/explain.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "harness/scenario/live.h"
#include "kernels/bf16.h"

namespace samebits {
namespace {

// Order-preserving integer image of a float's bits: adjacent floats differ by 1.
int64_t ordered(uint32_t bits) {
  return (bits & 0x80000000u) ? -int64_t(bits & 0x7fffffffu) : int64_t(bits);
}

// Both types compared as fp32 bit patterns (a bf16 is the top half of one); ulps are counted in
// the op's own type by the caller's `ulp_shift` (16 for bf16).
template <typename BitsA, typename BitsB>
ValueDifference compare_values(int64_t n, int ulp_shift, BitsA bits_a, BitsB bits_b) {
  ValueDifference d;
  d.elements = n;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t x = bits_a(i), y = bits_b(i);
    if (x == y) continue;
    ++d.differing;
    const double a = bits_float(x), b = bits_float(y);
    const double abs = std::isnan(a) || std::isnan(b) ? INFINITY : std::fabs(a - b);
    d.max_abs = std::max(d.max_abs, abs);
    d.max_ulp = std::max<int64_t>(d.max_ulp, std::llabs(ordered(x) - ordered(y)) >> ulp_shift);
  }
  return d;
}

// One op output row of one watched request, kept until the comparison.
struct CapturedRow {
  std::vector<uint8_t> bytes;
  bool fp32 = false;
  std::string plan;
  int64_t engine_step = 0;
};
using RowKey = std::tuple<int, int, int>;  // (position, layer, op): dependency order

struct Capture {
  std::map<RowKey, CapturedRow> rows;
  std::map<int, BatchContext> batch_of_position;  // the step that computed each position
  int needed_position = -1;  // the replay may stop once this position was computed
  int last_position = -1;
  int preemptions = 0;
  std::set<int64_t> steps_seen;
};

// Where a watched request sits in the current step's batch.
struct Placement {
  Capture* capture = nullptr;
  int64_t row_begin = 0;  // first token row
  int start = 0, tokens = 0;
  int logit_row = -1;     // -1: not sampled this step
};

ValueDifference compare_rows(const CapturedRow& a, const CapturedRow& b) {
  if (a.fp32) {
    const int64_t n = int64_t(std::min(a.bytes.size(), b.bytes.size()) / 4);
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    std::memcpy(x.data(), a.bytes.data(), size_t(n) * 4);
    std::memcpy(y.data(), b.bytes.data(), size_t(n) * 4);
    return compare_f32(x.data(), y.data(), n);
  }
  const int64_t n = int64_t(std::min(a.bytes.size(), b.bytes.size()) / 2);
  std::vector<uint16_t> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  std::memcpy(x.data(), a.bytes.data(), size_t(n) * 2);
  std::memcpy(y.data(), b.bytes.data(), size_t(n) * 2);
  return compare_bf16(x.data(), y.data(), n);
}

TopTwo top_two_of(const CapturedRow& row) {
  std::vector<float> v(row.bytes.size() / 4);
  std::memcpy(v.data(), row.bytes.data(), v.size() * 4);
  return top_two(v.data(), int64_t(v.size()));
}


// Fills e from the two captures: first difference, its plans, growth, top-2 at the fork token.
void compare_captures(const Capture& main, const Capture& other, int num_layers, Explanation* e) {
  e->num_layers = num_layers;
  const int last = e->prompt_tokens - 1 + e->top_step;  // position of the fork token's logits
  auto step_of = [&](int position) { return position - (e->prompt_tokens - 1); };
  const RowKey* first = nullptr;
  for (const auto& [key, row] : main.rows) {
    if (std::get<0>(key) > last) break;
    auto it = other.rows.find(key);
    if (it == other.rows.end() || it->second.bytes == row.bytes) continue;
    first = &key;
    break;
  }
  if (first == nullptr) {
    e->notes.push_back(absl::StrCat("no op output differs among the rows both samples computed up to position ", last,
                                    ": the difference entered through rows only one of them computed (prefix cache)"));
  } else {
    const auto [position, layer, op] = *first;
    const CapturedRow& a = main.rows.at(*first);
    const CapturedRow& b = other.rows.at(*first);
    e->found = true;
    e->position = position;
    e->token_step = step_of(position) >= 0 ? step_of(position) : -1;
    e->layer = layer - 1;
    e->op = model_op_name(ModelOp(op));
    e->diff = compare_rows(a, b);
    e->main_plan = a.plan, e->other_plan = b.plan;
    if (auto it = main.batch_of_position.find(position); it != main.batch_of_position.end()) e->main_batch = it->second;
    if (auto it = other.batch_of_position.find(position); it != other.batch_of_position.end()) e->other_batch = it->second;
    // Plans of every op at that position (one entry per op and plan pair, across layers).
    std::set<std::tuple<std::string, std::string, std::string>> seen;
    for (auto it = main.rows.lower_bound({position, 0, 0}); it != main.rows.end() && std::get<0>(it->first) == position; ++it) {
      auto o = other.rows.find(it->first);
      if (o == other.rows.end() || o->second.plan == it->second.plan) continue;
      const std::string name = model_op_name(ModelOp(std::get<2>(it->first)));
      if (seen.insert({name, it->second.plan, o->second.plan}).second) e->plans.push_back({name, it->second.plan, o->second.plan});
    }
  }
  // Growth: layer by layer at the position whose logits differ first (else the first difference).
  const int growth_position = e->first_logit_step >= 0 ? e->prompt_tokens - 1 + e->first_logit_step : e->position;
  e->growth_position = growth_position;
  auto differs = [&](const RowKey& k, ValueDifference* d) {
    auto x = main.rows.find(k);
    auto y = other.rows.find(k);
    if (x == main.rows.end() || y == other.rows.end()) return false;
    if (d) *d = compare_rows(x->second, y->second);
    return x->second.bytes != y->second.bytes;
  };
  // The first op of (position, layer) whose output differs, or "" (the residual entering the layer
  // is the previous layer's output, not one of this layer's ops).
  auto first_in_layer = [&](int position, int stored_layer) -> std::string {
    for (auto it = main.rows.lower_bound({position, stored_layer, 0});
         it != main.rows.end() && std::get<0>(it->first) == position && std::get<1>(it->first) == stored_layer; ++it)
      if (std::get<2>(it->first) != int(ModelOp::kResidualIn) && differs(it->first, nullptr))
        return model_op_name(ModelOp(std::get<2>(it->first)));
    return "";
  };
  if (growth_position >= 0) {
    for (int l = 0; l < num_layers; ++l) {
      ValueDifference d;
      if (!differs({growth_position, l + 2, int(ModelOp::kResidualIn)}, &d) && d.elements == 0) continue;
      const std::string op = first_in_layer(growth_position, l + 1);
      e->growth.push_back({absl::StrCat("layer ", l, " output", op.empty() ? "" : " (first: " + op + ")"), d});
    }
    for (ModelOp final_op : {ModelOp::kFinalNorm, ModelOp::kLogits}) {
      ValueDifference d;
      differs({growth_position, num_layers + 1, int(final_op)}, &d);
      if (d.elements > 0) e->growth.push_back({model_op_name(final_op), d});
    }
  }
  // The first difference that survived into a layer's output (the residual stream), when the very
  // first one was absorbed by rounding.
  for (const auto& [key, row] : main.rows) {
    if (std::get<0>(key) > last) break;
    if (std::get<2>(key) != int(ModelOp::kResidualIn) || std::get<1>(key) < 2) continue;
    ValueDifference d;
    if (!differs(key, &d)) continue;
    const int layer = std::get<1>(key) - 2;
    const std::string op = first_in_layer(std::get<0>(key), layer + 1);
    Explanation probe = *e;
    probe.position = std::get<0>(key), probe.layer = layer, probe.op = op;
    probe.token_step = step_of(probe.position) >= 0 ? step_of(probe.position) : -1;
    if (probe.where() != e->where())
      e->reached_output = absl::StrFormat("%s (layer %d output max |diff| %.3g)", probe.where(), layer, d.max_abs);
    break;
  }
  // Logits from the first logit divergence to the fork token, and the top two at the fork token.
  for (int s = std::max(0, e->first_logit_step); s <= e->top_step; ++s) {
    const RowKey k{e->prompt_tokens - 1 + s, num_layers + 1, int(ModelOp::kLogits)};
    auto x = main.rows.find(k);
    auto y = other.rows.find(k);
    if (x == main.rows.end() || y == other.rows.end()) continue;
    const double d = compare_rows(x->second, y->second).max_abs;
    e->logit_growth.push_back({s, d});
    if (s == e->top_step) {
      e->main_top = top_two_of(x->second);
      e->other_top = top_two_of(y->second);
      e->top_step_logits_max_abs = d;
    }
  }
  for (const auto* c : {&main, &other}) {
    if (c->preemptions > 0)
      e->notes.push_back(absl::StrCat("sample ", c == &main ? e->main_sample : e->other_sample, " was preempted ",
                                      c->preemptions, " time(s); recomputed rows are not compared (the first computation is)"));
  }
}

}  // namespace

ValueDifference compare_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  return compare_values(n, 16, [&](int64_t i) { return uint32_t(a[i]) << 16; }, [&](int64_t i) { return uint32_t(b[i]) << 16; });
}

ValueDifference compare_f32(const float* a, const float* b, int64_t n) {
  return compare_values(n, 0, [&](int64_t i) { return float_bits(a[i]); }, [&](int64_t i) { return float_bits(b[i]); });
}

TopTwo top_two(const float* logits, int64_t n) {
  TopTwo t;
  auto better = [&](int64_t i, int32_t than) { return than < 0 || logits[i] > logits[than]; };  // ties: lower id
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(logits[i])) continue;
    if (better(i, t.first)) {
      t.second = t.first;
      t.first = int32_t(i);
    } else if (better(i, t.second)) {
      t.second = int32_t(i);
    }
  }
  if (t.first >= 0) t.first_logit = logits[t.first];
  if (t.second >= 0) t.second_logit = logits[t.second];
  return t;
}

std::vector<Explanation> pairs_to_explain(const ModeResult& m, const ExplainOptions& options) {
  std::vector<Explanation> pairs;
  if (m.streams.size() < 2 && m.groups.size() < 2) return pairs;
  // Main-stream sample nearest before `sample` (else the first one after it).
  auto main_near = [&](int sample) {
    int before = -1, after = -1;
    for (const SampleSummary& s : m.per_sample) {
      if (s.stream != 0) continue;
      if (s.sample <= sample) before = std::max(before, s.sample);
      else if (after < 0 || s.sample < after) after = s.sample;
    }
    return before >= 0 ? before : after;
  };
  auto summary_of = [&](int sample) -> const SampleSummary* {
    for (const SampleSummary& s : m.per_sample)
      if (s.sample == sample) return &s;
    return nullptr;
  };
  auto add = [&](int other, const std::string& why) {
    for (Explanation& e : pairs) {
      if (e.other_sample != other) continue;
      e.why += ", " + why;
      return;
    }
    const SampleSummary* s = summary_of(other);
    if (!s) return;
    Explanation e;
    e.mode = m.mode;
    e.why = why;
    e.other_sample = other;
    e.main_sample = main_near(other);
    e.completion = s->completion;
    e.fork_token = s->first_token_divergence;
    e.first_logit_step = s->first_logit_divergence;
    e.top_step = e.fork_token >= 0 ? e.fork_token : e.first_logit_step;
    if (e.main_sample >= 0 && e.top_step >= 0) pairs.push_back(std::move(e));
  };
  const int forks = int(m.groups.size()) - 1;
  for (int g = 1; g <= forks && g <= options.max_forks; ++g)
    add(m.groups[size_t(g)].first_sample, absl::StrCat("fork ", g, " of ", forks, " (", m.groups[size_t(g)].count, " samples)"));
  const SampleSummary* earliest = nullptr;
  for (const SampleSummary& s : m.per_sample)
    if (s.first_logit_divergence >= 0 && (!earliest || s.first_logit_divergence < earliest->first_logit_divergence)) earliest = &s;
  if (earliest) add(earliest->sample, "first logit divergence");
  return pairs;
}

absl::StatusOr<ModeExplanation> explain_mode(const Trace& trace, const TraceRun& run, const ModeResult& result,
                                             const ModelSource& model, const Backend& backend,
                                             const ExplainOptions& options) {
  ModeExplanation out;
  out.mode = result.mode;
  out.items = pairs_to_explain(result, options);
  if (out.items.empty()) {
    out.note = absl::StrCat(result.unique_completions(), " completion(s) and ", result.unique_logit_streams(),
                            " logit stream(s): nothing diverged, nothing to explain");
    return out;
  }
  if (absl::Status s = explain_pairs(trace, run, model, backend, &out.items); !s.ok()) return s;
  return out;
}

absl::Status explain_pairs(const Trace& trace, const TraceRun& run, const ModelSource& model, const Backend& backend,
                           std::vector<Explanation>* pairs) {
  std::map<int, uint64_t> request_of_sample;
  for (const Arrival& a : trace.requests)
    if (a.sample >= 0) request_of_sample[a.sample] = a.spec.id;
  std::map<uint64_t, Capture> captures;
  for (Explanation& e : *pairs) {
    e.main_request = request_of_sample[e.main_sample];
    e.other_request = request_of_sample[e.other_sample];
    for (const Arrival& a : trace.requests)
      if (a.sample == e.other_sample) e.prompt_tokens = int(a.spec.prompt.size());
    for (uint64_t id : {e.main_request, e.other_request}) {
      Capture& c = captures[id];
      c.needed_position = std::max(c.needed_position, e.prompt_tokens - 1 + e.top_step);
    }
  }

  std::vector<Placement> placed;
  int64_t current_step = 0, batch_tokens = 0;
  int batch_sequences = 0;
  ReplayHooks hooks;
  hooks.before_step = [&](size_t k, const StepRecord& record) {
    placed.clear();
    current_step = int64_t(k);
    batch_sequences = int(record.entries.size());
    int64_t row = 0;
    int logit_row = 0;
    for (const StepRecord::Entry& entry : record.entries) {
      if (auto it = captures.find(entry.request_id); it != captures.end()) {
        placed.push_back({&it->second, row, entry.start_position, entry.num_tokens, entry.samples ? logit_row : -1});
      }
      row += entry.num_tokens;
      logit_row += entry.samples ? 1 : 0;
    }
    batch_tokens = row;
    for (uint64_t id : record.preempted)
      if (auto it = captures.find(id); it != captures.end()) ++it->second.preemptions;
  };
  hooks.op_observer = [&](const OpOutput& o) {
    const size_t elem = o.fp32 ? 4 : 2, row_bytes = size_t(o.cols) * elem;
    for (const Placement& p : placed) {
      const bool logits = o.op == ModelOp::kLogits;
      if (logits && p.logit_row < 0) continue;
      const int64_t first_row = logits ? p.logit_row : p.row_begin;
      const int count = logits ? 1 : p.tokens;
      const int first_position = logits ? p.start + p.tokens - 1 : p.start;
      std::vector<uint8_t> bytes(row_bytes * size_t(count));
      const auto* src = static_cast<const uint8_t*>(o.data) + size_t(first_row) * row_bytes;
      if (!backend.download(bytes.data(), src, bytes.size()).ok()) continue;  // the step's own status reports it
      for (int i = 0; i < count; ++i) {
        const int position = first_position + i;
        CapturedRow row;
        row.bytes.assign(bytes.begin() + long(size_t(i) * row_bytes), bytes.begin() + long(size_t(i + 1) * row_bytes));
        row.fp32 = o.fp32;
        row.engine_step = current_step;
        row.plan = o.plan;
        if (o.attention_plan) {
          row.plan += absl::StrCat(" -> ", num_splits(*o.attention_plan, position + 1), " split(s) for this query");
          if (o.attention_plan->separate_new_keys && p.start > 0)
            row.plan += absl::StrCat(", keys 0-", p.start - 1, " cached + ", p.start, "-", position, " new");
        }
        // The first computation counts (a recompute after preemption is not compared).
        p.capture->rows.emplace(RowKey{position, o.layer + 1, int(o.op)}, std::move(row));
        p.capture->batch_of_position.emplace(position, BatchContext{current_step, batch_tokens, batch_sequences, p.start, p.tokens});
        p.capture->last_position = std::max(p.capture->last_position, position);
      }
    }
  };
  hooks.stop_after = [&](size_t) {
    for (const auto& [id, c] : captures)
      if (c.last_position < c.needed_position) return false;
    return true;
  };
  auto replay = replay_run(trace, run, model, backend, &hooks);
  if (!replay.ok()) return replay.status();
  for (Explanation& e : *pairs) compare_captures(captures[e.main_request], captures[e.other_request], model.config.num_layers, &e);
  return absl::OkStatus();
}

absl::StatusOr<ExplainReport> explain_run(const Trace& trace, const RunResults& results, const ModelSource& model,
                                          const Backend& backend, const ExplainOptions& options) {
  ExplainReport report;
  for (const ModeResult& m : results.modes) {
    const TraceRun* run = nullptr;
    for (const TraceRun& r : trace.runs)
      if (r.mode == m.mode) run = &r;
    if (!run && !pairs_to_explain(m, options).empty())
      return absl::InvalidArgumentError(absl::StrCat("the trace holds no ", std::string(mode_name(m.mode)), " run"));
    auto explained = run ? explain_mode(trace, *run, m, model, backend, options) : explain_mode(trace, TraceRun{}, m, model, backend, options);
    if (!explained.ok())
      return absl::Status(explained.status().code(), absl::StrCat("explain ", std::string(mode_name(m.mode)), " mode: ", explained.status().message()));
    report.modes.push_back(std::move(*explained));
  }
  return report;
}

}  // namespace samebits
