#include "tests/gpu/gpu_attention_harness.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "tests/support/test_support.h"

namespace samebits::testing {

std::string AttnShapeG::name() const { return absl::StrCat(hq, "q", hkv, "kv_d", hd, "_b", block_size); }

SeqG make_seq_g(const AttnShapeG& shape, int64_t len, uint64_t seed, float q_scale) {
  SeqG s;
  s.len = len;
  s.q = random_bf16(size_t(len * shape.q_row()), seed * 3 + 1, q_scale);
  s.k = random_bf16(size_t(len * shape.kv_row()), seed * 3 + 2);
  s.v = random_bf16(size_t(len * shape.kv_row()), seed * 3 + 3);
  return s;
}

PagedCacheG::PagedCacheG(const Backend& backend, const AttnShapeG& shape, int64_t num_blocks, uint64_t shuffle_seed)
    : backend_(backend), shape_(shape), num_blocks_(num_blocks) {
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(int32_t(b));
  if (shuffle_seed != 0) {
    std::mt19937_64 rng(shuffle_seed);
    std::shuffle(free_.begin(), free_.end(), rng);
  }
  const size_t n = size_t(num_blocks * shape.block_size * shape.kv_row());
  k_ = std::make_unique<DeviceBuffer<bf16>>(backend, n);
  v_ = std::make_unique<DeviceBuffer<bf16>>(backend, n);
  k_->upload(random_bf16(n, 900 + shuffle_seed, 50.f));  // garbage, never a valid key
  v_->upload(random_bf16(n, 901 + shuffle_seed, 50.f));
}

absl::StatusOr<int> PagedCacheG::add_sequence(int64_t capacity) {
  const int64_t need = (capacity + shape_.block_size - 1) / shape_.block_size;
  if (need > int64_t(free_.size())) return absl::ResourceExhaustedError("test cache: out of blocks");
  std::vector<int32_t> table;
  for (int64_t i = 0; i < need; ++i) {
    table.push_back(free_.back());
    free_.pop_back();
  }
  tables_.push_back(std::move(table));
  return int(tables_.size() - 1);
}

int64_t PagedCacheG::slot(int id, int64_t pos) const {
  return int64_t(tables_[size_t(id)][size_t(pos / shape_.block_size)]) * shape_.block_size + pos % shape_.block_size;
}

absl::StatusOr<std::vector<std::vector<bf16>>> run_step_g(PagedCacheG& cache, const std::vector<StepPartG>& parts,
                                                          const StepOptionsG& options) {
  const Backend& be = cache.backend();
  const AttnShapeG& sh = cache.shape();
  std::vector<bf16> q, k, v;
  std::vector<int64_t> slots;
  std::vector<int32_t> qs{0}, ctx_lens, tables;
  int max_blocks = 1;
  int64_t max_context = 0;
  for (const StepPartG& p : parts) max_blocks = std::max(max_blocks, int(cache.blocks(p.seq_id).size()) + 1);
  for (const StepPartG& p : parts) {
    const int64_t a = p.cached, b = p.cached + p.q_len;
    q.insert(q.end(), p.data->q.begin() + a * sh.q_row(), p.data->q.begin() + b * sh.q_row());
    k.insert(k.end(), p.data->k.begin() + a * sh.kv_row(), p.data->k.begin() + b * sh.kv_row());
    v.insert(v.end(), p.data->v.begin() + a * sh.kv_row(), p.data->v.begin() + b * sh.kv_row());
    for (int64_t pos = a; pos < b; ++pos) slots.push_back(cache.slot(p.seq_id, pos));
    qs.push_back(qs.back() + int32_t(p.q_len));
    ctx_lens.push_back(int32_t(b));
    max_context = std::max(max_context, b);
    std::vector<int32_t> row = cache.blocks(p.seq_id);
    row.resize(size_t(max_blocks), -7);  // unused entries hold garbage
    tables.insert(tables.end(), row.begin(), row.end());
  }
  const int64_t T = qs.back();
  std::vector<std::vector<bf16>> outputs;
  if (T == 0) return outputs;
  auto dq = device_copy(be, q);
  auto dk = device_copy(be, k);
  auto dv = device_copy(be, v);
  auto dslots = device_copy(be, slots);
  auto dqs = device_copy(be, qs);
  auto dctx = device_copy(be, ctx_lens);
  auto dtab = device_copy(be, tables);
  ExecContext ctx;
  ctx.mode = options.mode;
  ctx.parallel_units = options.parallel_units;
  KvWriteArgs w{dk->data(), dv->data(), dslots->data(), T, sh.hkv, sh.hd, cache.k().data(), cache.v().data(),
                cache.num_blocks() * sh.block_size};
  if (absl::Status st = be.kv_write(ctx, w); !st.ok()) return st;
  if (options.skip_attention) {
    if (absl::Status st = be.synchronize(ctx); !st.ok()) return st;
    return outputs;
  }
  DeviceBuffer<bf16> out(be, size_t(T * sh.q_row()));
  AttentionArgs a;
  a.q = dq->data();
  a.k_new = dk->data();
  a.v_new = dv->data();
  a.k_cache = cache.k().data();
  a.v_cache = cache.v().data();
  a.query_start = dqs->data();
  a.context_lens = dctx->data();
  a.block_tables = dtab->data();
  a.num_seqs = int(parts.size());
  a.max_blocks_per_seq = max_blocks;
  a.T = T;
  a.num_q_heads = sh.hq;
  a.num_kv_heads = sh.hkv;
  a.head_dim = sh.hd;
  a.block_size = sh.block_size;
  a.num_blocks = cache.num_blocks();
  a.scale = float(1.0 / std::sqrt(double(sh.hd)));
  a.plan = options.plan ? *options.plan
                        : plan_attention(options.mode, int(parts.size()), sh.hkv, max_context, options.parallel_units);
  a.out = out.data();
  if (options.host_mirrors) {
    a.host_query_start = qs.data();
    a.host_context_lens = ctx_lens.data();
  }
  const auto attention = options.attention ? options.attention : be.attention;
  if (absl::Status st = attention(ctx, a); !st.ok()) return st;
  if (absl::Status st = be.synchronize(ctx); !st.ok()) return st;
  const std::vector<bf16> all = out.download();
  if (std::string g = out.check_guards(); !g.empty()) return absl::InternalError("attention output: " + g);
  for (size_t i = 0; i < parts.size(); ++i) {
    outputs.emplace_back(all.begin() + int64_t(qs[i]) * sh.q_row(), all.begin() + int64_t(qs[i + 1]) * sh.q_row());
  }
  return outputs;
}

absl::StatusOr<std::vector<bf16>> run_schedule_g(const Backend& backend, const AttnShapeG& shape, const SeqG& seq,
                                                 int64_t start, const std::vector<int64_t>& steps,
                                                 const StepOptionsG& options, uint64_t shuffle_seed) {
  PagedCacheG cache(backend, shape, (seq.len + shape.block_size - 1) / shape.block_size + 8, shuffle_seed);
  absl::StatusOr<int> id = cache.add_sequence(seq.len);
  if (!id.ok()) return id.status();
  if (start > 0) {
    StepOptionsG prefix = options;
    prefix.skip_attention = true;
    absl::StatusOr<std::vector<std::vector<bf16>>> r = run_step_g(cache, {{*id, &seq, 0, start}}, prefix);
    if (!r.ok()) return r.status();
  }
  std::vector<bf16> all;
  int64_t at = start;
  for (int64_t n : steps) {
    absl::StatusOr<std::vector<std::vector<bf16>>> r = run_step_g(cache, {{*id, &seq, at, n}}, options);
    if (!r.ok()) return r.status();
    all.insert(all.end(), (*r)[0].begin(), (*r)[0].end());
    at += n;
  }
  if (at != seq.len) return absl::InvalidArgumentError("schedule does not cover the sequence");
  return all;
}

std::vector<int64_t> chunks_g(int64_t n, int64_t chunk) {
  std::vector<int64_t> out;
  for (int64_t a = 0; a < n; a += chunk) out.push_back(std::min(chunk, n - a));
  return out;
}

absl::StatusOr<std::vector<std::vector<bf16>>> route_step_g(const Backend& be, const AttnShapeG& shape,
                                                            const std::vector<SeqG>& seqs,
                                                            const std::vector<int64_t>& cached, StepOptionsG o) {
  int64_t blocks = 4;
  for (const SeqG& s : seqs) blocks += (s.len + shape.block_size - 1) / shape.block_size + 1;
  PagedCacheG cache(be, shape, blocks, 31);
  std::vector<StepPartG> pre, step;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int id = *cache.add_sequence(seqs[i].len);
    pre.push_back({id, &seqs[i], 0, cached[i]});
    step.push_back({id, &seqs[i], cached[i], seqs[i].len - cached[i]});
  }
  StepOptionsG prefix = o;
  prefix.skip_attention = true;
  if (absl::StatusOr<std::vector<std::vector<bf16>>> r = run_step_g(cache, pre, prefix); !r.ok()) return r.status();
  return run_step_g(cache, step, o);
}

std::string PlanCaseG::name() const {
  return absl::StrCat(mode_str(mode), " ", plan ? plan->describe() : "planned");
}

std::vector<PlanCaseG> plan_cases_g() {
  AttentionPlan size64, count5, count3, count40;
  size64.kind = AttentionPlan::Kind::kFixedSplitSize;
  size64.split_size = 64;
  count5.kind = count3.kind = count40.kind = AttentionPlan::Kind::kSplitCount;
  count5.split_count = 5;
  count5.separate_new_keys = true;
  count3.split_count = 3;
  // Many segments per row (the merge kernel's fold over 40 partials), splits shorter than a sub-block.
  count40.split_count = 40;
  count40.separate_new_keys = true;
  return {{Mode::kInvariant, std::nullopt}, {Mode::kDefault, std::nullopt}, {Mode::kInvariant, size64},
          {Mode::kDefault, count5}, {Mode::kDefault, count3}, {Mode::kDefault, count40}};
}

}  // namespace samebits::testing
