#include "harness/golden/results.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "harness/golden/digest.h"
#include "harness/golden/json_fields.h"

namespace samebits {
namespace {

constexpr int kForkContext = 40;  // tokens of text shown on each side of a fork

int first_token_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return int(i);
  return a.size() == b.size() ? -1 : int(n);
}

// Orders indices: `main` first, then by count (desc), then by first sample (asc).
template <typename CountOf, typename FirstOf>
std::vector<int> order(int n, int main, CountOf count, FirstOf first) {
  std::vector<int> idx(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) idx[size_t(i)] = i;
  std::sort(idx.begin(), idx.end(), [&](int x, int y) {
    if ((x == main) != (y == main)) return x == main;
    if (count(x) != count(y)) return count(x) > count(y);
    return first(x) < first(y);
  });
  return idx;
}

}  // namespace

double ModeResult::tokens_per_second() const {
  return figures.wall_seconds > 0 ? double(figures.tokens_generated) / figures.wall_seconds : 0.0;
}

const ModeResult* RunResults::find(Mode m) const {
  for (const auto& r : modes)
    if (r.mode == m) return &r;
  return nullptr;
}

std::string decode_text(const TextTokenizer& tokenizer, const std::vector<int32_t>& tokens, size_t begin, size_t end) {
  end = std::min(end, tokens.size());
  begin = std::min(begin, end);
  const std::vector<int32_t> part(tokens.begin() + long(begin), tokens.begin() + long(end));
  return display_text(tokenizer.decode_bytes(part, /*skip_special=*/true));
}

ModeResult analyze_mode(Mode mode, std::vector<TargetObservation> obs, const RunFigures& figures,
                        const TextTokenizer& tokenizer) {
  std::sort(obs.begin(), obs.end(), [](const auto& a, const auto& b) { return a.sample < b.sample; });
  ModeResult r;
  r.mode = mode;
  r.samples = int(obs.size());
  r.figures = figures;

  // Unique completions and logit streams, in order of first appearance.
  std::map<std::vector<int32_t>, int> group_of;
  std::map<uint64_t, int> stream_of;
  std::vector<CompletionGroup> groups;
  std::vector<LogitStream> streams;
  std::vector<int> stream_first;
  std::vector<std::pair<int, int>> raw(obs.size());  // (group, stream) per observation
  for (size_t i = 0; i < obs.size(); ++i) {
    auto [g, g_new] = group_of.emplace(obs[i].tokens, int(groups.size()));
    if (g_new) groups.push_back({obs[i].tokens, 0, 0, obs[i].sample, -1, "", "", "", ""});
    groups[size_t(g->second)].count++;
    auto [s, s_new] = stream_of.emplace(obs[i].digest, int(streams.size()));
    if (s_new) {
      streams.push_back({obs[i].digest, obs[i].steps, 0, g->second});
      stream_first.push_back(obs[i].sample);
      groups[size_t(g->second)].logit_streams++;
    }
    streams[size_t(s->second)].count++;
    raw[i] = {g->second, s->second};
  }
  if (obs.empty()) return r;

  int main_group = 0;
  for (int g = 1; g < int(groups.size()); ++g)
    if (groups[size_t(g)].count > groups[size_t(main_group)].count) main_group = g;
  int main_stream = -1;
  for (int s = 0; s < int(streams.size()); ++s) {
    if (streams[size_t(s)].completion != main_group) continue;
    if (main_stream < 0 || streams[size_t(s)].count > streams[size_t(main_stream)].count) main_stream = s;
  }

  const auto g_order = order(int(groups.size()), main_group, [&](int i) { return groups[size_t(i)].count; },
                             [&](int i) { return groups[size_t(i)].first_sample; });
  const auto s_order = order(int(streams.size()), main_stream, [&](int i) { return streams[size_t(i)].count; },
                             [&](int i) { return stream_first[size_t(i)]; });
  std::vector<int> g_rank(groups.size()), s_rank(streams.size());
  for (size_t i = 0; i < g_order.size(); ++i) g_rank[size_t(g_order[i])] = int(i);
  for (size_t i = 0; i < s_order.size(); ++i) s_rank[size_t(s_order[i])] = int(i);
  for (int g : g_order) r.groups.push_back(std::move(groups[size_t(g)]));
  for (int s : s_order) {
    streams[size_t(s)].completion = g_rank[size_t(streams[size_t(s)].completion)];
    r.streams.push_back(std::move(streams[size_t(s)]));
  }

  for (CompletionGroup& g : r.groups) g.text = decode_text(tokenizer, g.tokens, 0, g.tokens.size());
  const CompletionGroup& main = r.groups[0];
  for (size_t g = 1; g < r.groups.size(); ++g) {
    CompletionGroup& other = r.groups[g];
    other.fork_position = first_token_difference(other.tokens, main.tokens);
    const size_t fork = size_t(other.fork_position);
    other.text_before = decode_text(tokenizer, main.tokens, fork > kForkContext ? fork - kForkContext : 0, fork);
    other.text_main = decode_text(tokenizer, main.tokens, fork, fork + kForkContext);
    other.text_this = decode_text(tokenizer, other.tokens, fork, fork + kForkContext);
  }

  for (size_t i = 0; i < obs.size(); ++i) {
    SampleSummary s;
    s.sample = obs[i].sample;
    s.completion = g_rank[size_t(raw[i].first)];
    s.stream = s_rank[size_t(raw[i].second)];
    s.first_token_divergence = first_token_difference(obs[i].tokens, main.tokens);
    s.first_logit_divergence = first_difference(obs[i].steps, r.streams[0].steps);
    s.prefix_hit_tokens = obs[i].prefix_hit_tokens;
    s.preemptions = obs[i].preemptions;
    s.finish = obs[i].finish;
    auto earliest = [](int current, int candidate) {
      return candidate < 0 ? current : (current < 0 ? candidate : std::min(current, candidate));
    };
    r.earliest_token_divergence = earliest(r.earliest_token_divergence, s.first_token_divergence);
    r.earliest_logit_divergence = earliest(r.earliest_logit_divergence, s.first_logit_divergence);
    r.samples_token_diverged += s.first_token_divergence >= 0;
    r.samples_logit_diverged += s.first_logit_divergence >= 0;
    r.per_sample.push_back(std::move(s));
  }
  return r;
}

namespace {

ComparisonLine compare_modes(const ModeResult& ma, const ModeResult& mb) {
  ComparisonLine line;
  line.mode = ma.mode == mb.mode ? std::string(mode_name(ma.mode))
                                 : absl::StrCat(std::string(mode_name(ma.mode)), " vs ", std::string(mode_name(mb.mode)));
  line.unique_completions_a = ma.unique_completions();
  line.unique_completions_b = mb.unique_completions();
  line.unique_streams_a = ma.unique_logit_streams();
  line.unique_streams_b = mb.unique_logit_streams();
  line.first_token_divergence_a = ma.earliest_token_divergence;
  line.first_token_divergence_b = mb.earliest_token_divergence;
  line.main_completions_agree = !ma.groups.empty() && !mb.groups.empty() &&
                                (ma.groups[0].tokens == mb.groups[0].tokens || ma.main_text() == mb.main_text());
  const size_t n = std::min(ma.per_sample.size(), mb.per_sample.size());
  line.samples_compared = int(n);
  if (ma.per_sample.size() != mb.per_sample.size())
    line.note = absl::StrCat("sample counts differ (", ma.per_sample.size(), " vs ", mb.per_sample.size(), ")");
  for (size_t i = 0; i < n; ++i) {
    const SampleSummary& sa = ma.per_sample[i];
    const SampleSummary& sb = mb.per_sample[i];
    const LogitStream& la = ma.streams[size_t(sa.stream)];
    const LogitStream& lb = mb.streams[size_t(sb.stream)];
    if (la.digest == lb.digest) continue;
    line.samples_differing++;
    if (line.first_sample < 0) {
      line.first_sample = sa.sample;
      line.first_token_step = first_token_difference(ma.groups[size_t(sa.completion)].tokens,
                                                     mb.groups[size_t(sb.completion)].tokens);
      line.first_logit_step = first_difference(la.steps, lb.steps);
    }
  }
  return line;
}

}  // namespace

std::vector<ComparisonLine> compare_results(const RunResults& a, const RunResults& b) {
  if (a.modes.size() == 1 && b.modes.size() == 1) return {compare_modes(a.modes[0], b.modes[0])};
  std::vector<ComparisonLine> lines;
  for (const ModeResult& ma : a.modes) {
    if (const ModeResult* mb = b.find(ma.mode)) {
      lines.push_back(compare_modes(ma, *mb));
    } else {
      ComparisonLine line;
      line.mode = std::string(mode_name(ma.mode));
      line.note = "only in the first file";
      lines.push_back(line);
    }
  }
  for (const ModeResult& mb : b.modes) {
    if (a.find(mb.mode)) continue;
    ComparisonLine line;
    line.mode = std::string(mode_name(mb.mode));
    line.note = "only in the second file";
    lines.push_back(line);
  }
  return lines;
}

}  // namespace samebits
