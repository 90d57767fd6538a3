#include "tests/kernels/attention_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/cpu_ops.h"
#include "tests/kernels/reference.h"

namespace samebits::testing {

std::string AttnShape::name() const {
  return absl::StrCat(num_q_heads, "q", num_kv_heads, "kv_d", head_dim, "_b", block_size);
}

float AttnShape::scale() const { return float(1.0 / std::sqrt(double(head_dim))); }

SeqData make_seq_data(const AttnShape& shape, int64_t len, uint64_t seed, float q_scale) {
  SeqData s;
  s.len = len;
  s.q = random_bf16(size_t(len * shape.q_row()), seed * 3 + 1, q_scale);
  s.k = random_bf16(size_t(len * shape.kv_row()), seed * 3 + 2);
  s.v = random_bf16(size_t(len * shape.kv_row()), seed * 3 + 3);
  return s;
}

std::vector<double> reference_attention(const AttnShape& shape, const SeqData& seq, int64_t p) {
  const int hd = shape.head_dim;
  const int group = shape.num_q_heads / shape.num_kv_heads;
  std::vector<double> out(shape.q_row(), 0.0), scores(p + 1);
  for (int h = 0; h < shape.num_q_heads; ++h) {
    const bf16* q = seq.q.data() + p * shape.q_row() + int64_t(h) * hd;
    const int64_t kv_off = int64_t(h / group) * hd;
    double max_score = -INFINITY;
    for (int64_t j = 0; j <= p; ++j) {
      const bf16* k = seq.k.data() + j * shape.kv_row() + kv_off;
      double dot = 0;
      for (int d = 0; d < hd; ++d) dot += double(to_float(q[d])) * double(to_float(k[d]));
      scores[j] = dot * double(shape.scale());
      max_score = std::max(max_score, scores[j]);
    }
    double total = 0;
    for (int64_t j = 0; j <= p; ++j) {
      const double e = std::exp(scores[j] - max_score);
      total += e;
      const bf16* v = seq.v.data() + j * shape.kv_row() + kv_off;
      for (int d = 0; d < hd; ++d) out[h * hd + d] += e * double(to_float(v[d]));
    }
    for (int d = 0; d < hd; ++d) out[h * hd + d] /= total;
  }
  return out;
}

PagedCache::PagedCache(const AttnShape& shape, int64_t num_blocks, uint64_t shuffle_seed)
    : shape_(shape),
      num_blocks_(num_blocks),
      k_(size_t(num_blocks * shape.block_size * shape.kv_row())),
      v_(size_t(num_blocks * shape.block_size * shape.kv_row())) {
  // Garbage in every slot (values in [-4, 4), cheap LCG: caches are large): a kernel that reads a
  // slot nobody wrote gets visibly wrong results.
  uint64_t state = 0xC0FFEE + shuffle_seed;
  for (Guarded<bf16>* cache : {&k_, &v_}) {
    for (size_t i = 0; i < cache->size(); ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      cache->data()[i] = to_bf16(float(int64_t(state >> 40) - (1 << 23)) / float(1 << 21));
    }
  }
  free_.resize(num_blocks);
  for (int64_t b = 0; b < num_blocks; ++b) free_[b] = int32_t(num_blocks - 1 - b);  // back = 0
  if (shuffle_seed != 0) {
    std::mt19937_64 rng(shuffle_seed);  // the engine is specified; only its output is used
    for (int64_t i = num_blocks - 1; i > 0; --i) std::swap(free_[i], free_[rng() % uint64_t(i + 1)]);
  }
}

absl::StatusOr<int> PagedCache::add_sequence(int64_t capacity) {
  const int64_t blocks = (capacity + shape_.block_size - 1) / shape_.block_size;
  if (blocks > int64_t(free_.size())) {
    return absl::ResourceExhaustedError(absl::StrCat("paged cache: ", blocks, " blocks wanted, ",
                                                     free_.size(), " free"));
  }
  std::vector<int32_t> table;
  for (int64_t b = 0; b < blocks; ++b) {
    table.push_back(free_.back());
    free_.pop_back();
  }
  tables_.push_back(std::move(table));
  return int(tables_.size() - 1);
}

int64_t PagedCache::slot(int id, int64_t pos) const {
  return int64_t(tables_[id][pos / shape_.block_size]) * shape_.block_size + pos % shape_.block_size;
}

namespace {

absl::Status write_rows(PagedCache& cache, const std::vector<bf16>& k, const std::vector<bf16>& v,
                        const std::vector<int64_t>& slots) {
  KvWriteArgs w;
  w.k = k.data();
  w.v = v.data();
  w.slot_mapping = slots.data();
  w.T = int64_t(slots.size());
  w.num_kv_heads = cache.shape().num_kv_heads;
  w.head_dim = cache.shape().head_dim;
  w.k_cache = cache.k().data();
  w.v_cache = cache.v().data();
  w.num_slots = cache.num_slots();
  return cpu_kv_write(ExecContext{}, w);
}

void append_rows(std::vector<bf16>* dst, const std::vector<bf16>& src, int64_t row, int64_t from,
                 int64_t to) {
  dst->insert(dst->end(), src.begin() + from * row, src.begin() + to * row);
}

}  // namespace

absl::Status write_prefix(PagedCache& cache, int seq_id, const SeqData& seq, int64_t from, int64_t to) {
  const int64_t row = cache.shape().kv_row();
  std::vector<bf16> k, v;
  std::vector<int64_t> slots;
  append_rows(&k, seq.k, row, from, to);
  append_rows(&v, seq.v, row, from, to);
  for (int64_t p = from; p < to; ++p) slots.push_back(cache.slot(seq_id, p));
  return write_rows(cache, k, v, slots);
}

absl::StatusOr<StepResult> run_step(PagedCache& cache, const std::vector<StepPart>& parts,
                                    const StepOptions& options) {
  const AttnShape& shape = cache.shape();
  std::vector<bf16> q, k_new, v_new;
  std::vector<int64_t> slots;
  std::vector<int32_t> query_start{0}, context_lens;
  int64_t max_context = 0;
  size_t width = 0;
  for (const StepPart& part : parts) {
    const int64_t end = part.cached + part.q_len;
    append_rows(&q, part.data->q, shape.q_row(), part.cached, end);
    append_rows(&k_new, part.data->k, shape.kv_row(), part.cached, end);
    append_rows(&v_new, part.data->v, shape.kv_row(), part.cached, end);
    for (int64_t p = part.cached; p < end; ++p) slots.push_back(cache.slot(part.seq_id, p));
    query_start.push_back(int32_t(query_start.back() + part.q_len));
    context_lens.push_back(int32_t(end));
    max_context = std::max(max_context, end);
    width = std::max(width, cache.blocks(part.seq_id).size());
  }
  width += size_t(options.extra_table_width);
  std::vector<int32_t> tables(parts.size() * width, -7);  // unused columns hold an invalid block
  for (size_t s = 0; s < parts.size(); ++s) {
    const auto& blocks = cache.blocks(parts[s].seq_id);
    std::copy(blocks.begin(), blocks.end(), tables.begin() + s * width);
  }
  if (absl::Status st = write_rows(cache, k_new, v_new, slots); !st.ok()) return st;

  const int64_t T = query_start.back();
  Guarded<bf16> out(size_t(T * shape.q_row()));
  ExecContext ctx;
  ctx.mode = options.mode;
  ctx.num_threads = options.num_threads;
  ctx.parallel_units = options.parallel_units;
  AttentionArgs a;
  a.q = q.data();
  a.k_new = k_new.data();
  a.v_new = v_new.data();
  a.k_cache = cache.k().data();
  a.v_cache = cache.v().data();
  a.query_start = query_start.data();
  a.context_lens = context_lens.data();
  a.block_tables = tables.data();
  a.num_seqs = int(parts.size());
  a.max_blocks_per_seq = int(width);
  a.T = T;
  a.num_q_heads = shape.num_q_heads;
  a.num_kv_heads = shape.num_kv_heads;
  a.head_dim = shape.head_dim;
  a.block_size = shape.block_size;
  a.num_blocks = cache.num_blocks();
  a.scale = shape.scale();
  a.plan = options.plan ? *options.plan
                        : plan_attention(options.mode, a.num_seqs, a.num_kv_heads, max_context,
                                         options.parallel_units);
  a.out = out.data();
  const std::vector<bf16> k_before(cache.k().data(), cache.k().data() + cache.k().size());
  const std::vector<bf16> v_before(cache.v().data(), cache.v().data() + cache.v().size());
  if (absl::Status st = cpu_attention(ctx, a); !st.ok()) return st;
  if (std::memcmp(k_before.data(), cache.k().data(), k_before.size() * sizeof(bf16)) != 0 ||
      std::memcmp(v_before.data(), cache.v().data(), v_before.size() * sizeof(bf16)) != 0) {
    return absl::InternalError("attention changed the KV cache");
  }
  for (const Guarded<bf16>* g : {&out, &cache.k(), &cache.v()}) {
    if (std::string why = g->check_guards(); !why.empty()) return absl::InternalError(why);
  }
  StepResult result;
  result.plan = a.plan;
  int64_t row_begin = 0;
  for (const StepPart& part : parts) {
    const bf16* first = out.data() + row_begin * shape.q_row();
    result.outputs.emplace_back(first, first + part.q_len * shape.q_row());
    row_begin += part.q_len;
  }
  return result;
}

absl::StatusOr<std::vector<bf16>> run_schedule(const AttnShape& shape, const SeqData& seq, int64_t start,
                                               const std::vector<int64_t>& step_lengths,
                                               const StepOptions& options, uint64_t shuffle_seed) {
  PagedCache cache(shape, (seq.len + shape.block_size - 1) / shape.block_size + 3, shuffle_seed);
  absl::StatusOr<int> id = cache.add_sequence(seq.len);
  if (!id.ok()) return id.status();
  if (absl::Status st = write_prefix(cache, *id, seq, 0, start); !st.ok()) return st;
  std::vector<bf16> outputs;
  int64_t done = start;
  for (int64_t q_len : step_lengths) {
    absl::StatusOr<StepResult> r = run_step(cache, {{*id, &seq, done, q_len}}, options);
    if (!r.ok()) return r.status();
    outputs.insert(outputs.end(), r->outputs[0].begin(), r->outputs[0].end());
    done += q_len;
  }
  if (done != seq.len) {
    return absl::InvalidArgumentError(absl::StrCat("schedule ends at ", done, ", not ", seq.len));
  }
  return outputs;
}

std::vector<int64_t> chunks_of(int64_t n, int64_t chunk) {
  std::vector<int64_t> steps;
  for (int64_t done = 0; done < n; done += chunk) steps.push_back(std::min(chunk, n - done));
  return steps;
}

bool bitwise_equal(const std::vector<bf16>& a, const std::vector<bf16>& b) {
  return a.size() == b.size() && same_bytes(a.data(), b.data(), a.size());
}

int64_t first_difference(const std::vector<bf16>& a, const std::vector<bf16>& b) {
  if (a.size() != b.size()) return int64_t(std::min(a.size(), b.size()));
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].bits != b[i].bits) return int64_t(i);
  }
  return -1;
}

}  // namespace samebits::testing
