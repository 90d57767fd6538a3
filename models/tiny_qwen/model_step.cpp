// A step's end on the backend: sampling on the logits still in backend memory, the tokens and the
// observed logits rows copied back behind it, a mark behind the step, and the wait for that mark.
// Two steps may be in flight: step n + 1 is begun before step n is finished, with the tokens that
// step n samples fed to step n + 1 on the device (ForwardBatch::fed_tokens), so the host never
// waits for them before issuing the next step. Each begun step has its own staging by parity, and
// finish waits for the oldest step's mark only (Backend::mark), not for the step behind it.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "models/tiny_qwen/model_impl.h"

namespace samebits {
namespace {

absl::Status check_sample_rows(int64_t wanted, int64_t last_logit_rows) {
  if (last_logit_rows < 0 || wanted != last_logit_rows) {
    return absl::FailedPreconditionError(absl::StrCat("model.sample: ", wanted, " sampling rows but the last forward produced ",
                                                      last_logit_rows < 0 ? 0 : last_logit_rows, " logit rows"));
  }
  return absl::OkStatus();
}

}  // namespace

// feed_sources = [D slots the first gather fills | the batch's tokens as uploaded]; feed_ids[t]
// points token t at its fed slot or at its own uploaded value.
void Model::Impl::build_feed(const ForwardBatch& batch) {
  const size_t D = batch.fed_tokens.size(), T = batch.tokens.size();
  feed_sources.assign(D, 0);
  feed_sources.insert(feed_sources.end(), batch.tokens.begin(), batch.tokens.end());
  feed_ids.resize(T);
  for (size_t t = 0; t < T; ++t) feed_ids[t] = int32_t(D + t);
  for (size_t j = 0; j < D; ++j) feed_ids[size_t(batch.fed_tokens[j])] = int32_t(j);
}

// Two row gathers through the embedding op (rows of one int32 = two bf16 values: a bit copy),
// issued after the batch's upload and before its first op: sources[0..D) = sampled[fed_from], then
// tokens[t] = sources[feed_ids[t]] for the batch's real rows (padded rows keep their uploaded 0).
absl::Status Model::Impl::feed_tokens(const ExecContext& ctx, const ForwardBatch& batch, const int32_t* sampled,
                                      const size_t* offsets) {
  const Backend& b = *backend;
  uint8_t* meta = scratch.meta.as<uint8_t>();
  auto as_pairs = [](const void* p) { return static_cast<const bf16*>(p); };
  OpScope scope(ctx, "sampled tokens feed");
  EmbeddingArgs pick;
  pick.ids = reinterpret_cast<const int32_t*>(meta + offsets[kFedFrom]), pick.T = int64_t(batch.fed_from.size());
  pick.table = as_pairs(sampled), pick.vocab = last_sampled_rows, pick.dim = 2;
  pick.y = reinterpret_cast<bf16*>(meta + offsets[kSources]);
  SAMEBITS_RETURN_IF_ERROR(b.embedding(ctx, pick));
  EmbeddingArgs place;
  place.ids = reinterpret_cast<const int32_t*>(meta + offsets[kFeedIds]), place.T = int64_t(batch.tokens.size());
  place.table = as_pairs(meta + offsets[kSources]), place.vocab = int64_t(feed_sources.size()), place.dim = 2;
  place.y = reinterpret_cast<bf16*>(meta + offsets[kTokens]);
  return b.embedding(ctx, place);
}

absl::Status Model::sample(const ExecContext& ctx, std::span<const SamplingRow> rows, std::vector<int32_t>* tokens) {
  if (!impl_->pending.empty()) {
    return absl::FailedPreconditionError("model.sample: a begun step is not finished (forward_sample_finish first)");
  }
  SAMEBITS_RETURN_IF_ERROR(sample_enqueue(ctx, rows, {}));
  return forward_sample_finish(ctx, tokens, nullptr);
}

// The sample op on the logits still in backend memory, then the tokens and the wanted logits rows
// copied back behind it, then the step's mark; forward_sample_finish waits for that mark once.
absl::Status Model::sample_enqueue(const ExecContext& ctx, std::span<const SamplingRow> rows,
                                   std::span<const int32_t> host_rows) {
  Impl& m = *impl_;
  const Backend& b = *m.backend;
  SAMEBITS_RETURN_IF_ERROR(check_sample_rows(int64_t(rows.size()), m.last_logit_rows));
  const size_t V = size_t(m.config.vocab_size);
  for (int32_t r : host_rows) {
    if (r < 0 || r >= m.last_logit_rows) {
      return absl::InvalidArgumentError(absl::StrCat("model.forward_sample: host row ", r, " outside the ",
                                                     m.last_logit_rows, " logit rows"));
    }
  }
  // A step that samples nothing still ends with its wait (in finish): device-side errors are
  // reported at the step that made them.
  const PendingStep step{int64_t(rows.size()), int64_t(host_rows.size()), int(m.steps_begun % 2)};
  if (!rows.empty()) {
    SampleArgs a;
    a.logits = m.scratch.logits.as<float>(), a.rows = int64_t(rows.size()), a.vocab = m.config.vocab_size;
    a.params = rows.data(), a.out = m.scratch.sampled.as<int32_t>();
    {
      OpScope scope(ctx, "sampling");
      SAMEBITS_RETURN_IF_ERROR(b.sample(ctx, a));
    }
    // out_host: [tokens | logits rows], the logits 8-byte aligned.
    HostStaging& out = m.out_host[step.parity];
    const size_t token_bytes = align8(rows.size() * sizeof(int32_t));
    SAMEBITS_RETURN_IF_ERROR(out.reserve(b, token_bytes + host_rows.size() * V * sizeof(float)));
    float* host_logits = reinterpret_cast<float*>(out.as<uint8_t>() + token_bytes);
    {
      OpScope scope(ctx, "tokens copy");
      SAMEBITS_RETURN_IF_ERROR(m.copy_back(ctx, out.as<void>(), a.out, rows.size() * sizeof(int32_t)));
    }
    if (!host_rows.empty()) {
      OpScope scope(ctx, "logits copy (observed rows)");
      for (size_t i = 0; i < host_rows.size(); ++i) {
        // Consecutive rows travel in one copy.
        const int32_t r = host_rows[i];
        size_t n = 1;
        while (i + n < host_rows.size() && host_rows[i + n] == r + int32_t(n)) ++n;
        SAMEBITS_RETURN_IF_ERROR(m.copy_back(ctx, host_logits + i * V, m.scratch.logits.as<float>() + size_t(r) * V,
                                             n * V * sizeof(float)));
        i += n - 1;
      }
    }
  }
  if (b.mark != nullptr) SAMEBITS_RETURN_IF_ERROR(b.mark(ctx, step.parity));
  m.pending.push_back(step);
  ++m.steps_begun;
  m.last_sampled_rows = int64_t(rows.size());
  return absl::OkStatus();
}

absl::Status Model::forward_sample_finish(const ExecContext& ctx, std::vector<int32_t>* tokens,
                                          std::vector<float>* logits) {
  Impl& m = *impl_;
  if (m.pending.empty()) return absl::FailedPreconditionError("model.forward_sample_finish: no step was begun");
  const PendingStep step = m.pending.front();
  m.pending.pop_front();
  const size_t rows = size_t(step.tokens), host_rows = size_t(step.host_rows), V = size_t(m.config.vocab_size);
  tokens->resize(rows);
  if (logits != nullptr) logits->resize(host_rows * V);
  {
    OpScope scope(ctx, "step wait");
    SAMEBITS_RETURN_IF_ERROR(m.backend->wait_mark != nullptr ? m.backend->wait_mark(step.parity)
                                                             : m.backend->synchronize(ctx));
  }
  if (rows == 0) return absl::OkStatus();
  const HostStaging& out = m.out_host[step.parity];
  const size_t token_bytes = align8(rows * sizeof(int32_t));
  std::memcpy(tokens->data(), out.as<void>(), rows * sizeof(int32_t));
  if (logits != nullptr && host_rows > 0) {
    std::memcpy(logits->data(), out.as<uint8_t>() + token_bytes, host_rows * V * sizeof(float));
  }
  return absl::OkStatus();
}

absl::Status Model::forward_sample_begin(const ExecContext& ctx, const ForwardBatch& batch,
                                         std::span<const SamplingRow> rows, std::span<const int32_t> host_rows) {
  if (impl_->pending.size() >= kMaxPendingSteps) {
    return absl::FailedPreconditionError(absl::StrCat("model.forward_sample_begin: ", kMaxPendingSteps,
                                                      " steps are already in flight (finish the oldest first)"));
  }
  SAMEBITS_RETURN_IF_ERROR(impl_->enqueue_forward(ctx, batch));
  return sample_enqueue(ctx, rows, host_rows);
}

absl::Status Model::forward_sample(const ExecContext& ctx, const ForwardBatch& batch, std::span<const SamplingRow> rows,
                                   std::span<const int32_t> host_rows, std::vector<int32_t>* tokens,
                                   std::vector<float>* logits) {
  SAMEBITS_RETURN_IF_ERROR(forward_sample_begin(ctx, batch, rows, host_rows));
  return forward_sample_finish(ctx, tokens, logits);
}

}  // namespace samebits
