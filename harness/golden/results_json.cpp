// JSON form of RunResults (schema "samebits_results": 2; the run's identity is the "identity"
// object of harness/golden/run_identity.h). Tokens are stored per unique completion
// and step digests per unique logit stream, so a run where every sample agrees stays small.
#include <algorithm>
#include <fstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "harness/golden/digest.h"
#include "common/input_file.h"
#include "harness/golden/json_fields.h"
#include "harness/golden/results.h"

namespace samebits {
namespace {

constexpr int kResultsSchema = 2;
using nlohmann::json;

json timing_to_json(const RunFigures& f) {
  json ops = json::array();
  for (const auto& op : f.op_times) ops.push_back({{"kind", op.kind}, {"calls", op.calls}, {"seconds", op.seconds}, {"host_seconds", op.host_seconds}});
  const double steps = double(std::max<int64_t>(f.engine_steps, 1));
  return {{"setup_weights_seconds", f.setup_weights_seconds},
          {"setup_weights_bytes", f.setup_weights_bytes},
          {"setup_kv_cache_seconds", f.setup_kv_cache_seconds},
          {"step_seconds", f.step_seconds},
          {"host_wait_seconds", f.host_wait_seconds},
          {"host_waits", f.host_waits},
          {"host_idle_device_seconds", f.host_idle_device_seconds},
          {"overlapped_steps", f.overlapped_steps},
          {"scheduled_ahead_steps", f.scheduled_ahead_steps},
          {"discarded_rows", f.discarded_rows},
          {"host_schedule_seconds", f.host_schedule_seconds},
          {"host_issue_seconds", f.host_issue_seconds},
          {"host_book_seconds", f.host_book_seconds},
          {"graph_replays", f.graph_replays},
          {"graph_captures", f.graph_captures},
          {"host_seconds_per_step", (f.step_seconds - f.host_wait_seconds) / steps},
          {"host_waits_per_step", double(f.host_waits) / steps},
          {"host_rss_baseline_bytes", f.host_rss_baseline_bytes},
          {"host_peak_rss_bytes", f.host_peak_rss_bytes},
          {"ops", std::move(ops)}};
}

// The derived per-step figures are written for readers and not read back.
void timing_from_json(const std::string& file, JsonFields& f, RunFigures* out) {
  const json* t = f.object("timing");
  if (t == nullptr) return;
  JsonFields tf(file, t, f.field("timing"));
  tf.get("setup_weights_seconds", &out->setup_weights_seconds);
  tf.get("setup_kv_cache_seconds", &out->setup_kv_cache_seconds);
  if (tf.has("setup_weights_bytes")) tf.get("setup_weights_bytes", &out->setup_weights_bytes);
  tf.get("step_seconds", &out->step_seconds);
  tf.get("host_wait_seconds", &out->host_wait_seconds);
  tf.get("host_waits", &out->host_waits);
  if (tf.has("host_idle_device_seconds")) tf.get("host_idle_device_seconds", &out->host_idle_device_seconds);
  if (tf.has("overlapped_steps")) tf.get("overlapped_steps", &out->overlapped_steps);
  if (tf.has("scheduled_ahead_steps")) tf.get("scheduled_ahead_steps", &out->scheduled_ahead_steps);
  if (tf.has("discarded_rows")) tf.get("discarded_rows", &out->discarded_rows);
  if (tf.has("host_schedule_seconds")) tf.get("host_schedule_seconds", &out->host_schedule_seconds);
  if (tf.has("host_issue_seconds")) tf.get("host_issue_seconds", &out->host_issue_seconds);
  if (tf.has("host_book_seconds")) tf.get("host_book_seconds", &out->host_book_seconds);
  if (tf.has("graph_replays")) tf.get("graph_replays", &out->graph_replays);
  if (tf.has("graph_captures")) tf.get("graph_captures", &out->graph_captures);
  tf.get("host_rss_baseline_bytes", &out->host_rss_baseline_bytes);
  tf.get("host_peak_rss_bytes", &out->host_peak_rss_bytes);
  if (const json* ops = tf.array("ops")) {
    for (size_t i = 0; i < ops->size(); ++i) {
      JsonFields of(file, &(*ops)[i], absl::StrCat(tf.field("ops"), "[", i, "]"));
      RunFigures::OpFigure op;
      of.get("kind", &op.kind);
      of.get("calls", &op.calls);
      of.get("seconds", &op.seconds);
      of.get("host_seconds", &op.host_seconds);
      tf.merge(of.status());
      out->op_times.push_back(std::move(op));
    }
  }
  f.merge(tf.status());
}

json mode_to_json(const ModeResult& m) {
  json j;
  j["mode"] = std::string(mode_name(m.mode));
  j["samples"] = m.samples;
  j["unique_completions"] = m.unique_completions();
  j["unique_logit_streams"] = m.unique_logit_streams();
  j["first_token_divergence"] = m.earliest_token_divergence;
  j["first_logit_divergence"] = m.earliest_logit_divergence;
  j["samples_token_diverged"] = m.samples_token_diverged;
  j["samples_logit_diverged"] = m.samples_logit_diverged;
  j["wall_seconds"] = m.figures.wall_seconds;
  j["engine_steps"] = m.figures.engine_steps;
  j["tokens_generated"] = m.figures.tokens_generated;
  j["tokens_computed"] = m.figures.tokens_computed;
  j["tokens_per_second"] = m.tokens_per_second();
  j["prefix_hit_tokens"] = m.figures.prefix_hit_tokens;
  j["prefix_hit_requests"] = m.figures.prefix_hit_requests;
  j["preemptions"] = m.figures.preemptions;
  j["schedule_digest"] = digest_hex(m.figures.schedule_digest);
  j["timing"] = timing_to_json(m.figures);
  j["main_text"] = m.main_text();
  j["golden"] = {{"status", m.golden.state}, {"detail", m.golden.detail}};
  json groups = json::array();
  for (const auto& g : m.groups) {
    groups.push_back({{"count", g.count}, {"logit_streams", g.logit_streams}, {"first_sample", g.first_sample},
                      {"fork_position", g.fork_position}, {"text", g.text}, {"text_before", g.text_before},
                      {"text_main", g.text_main}, {"text_this", g.text_this}, {"tokens", g.tokens}});
  }
  j["completions"] = std::move(groups);
  json streams = json::array();
  for (const auto& s : m.streams) {
    streams.push_back({{"digest", digest_hex(s.digest)}, {"count", s.count}, {"completion", s.completion},
                       {"steps", digest_list_hex(s.steps)}});
  }
  j["streams"] = std::move(streams);
  json samples = json::array();
  for (const auto& s : m.per_sample) {
    samples.push_back({{"sample", s.sample}, {"completion", s.completion}, {"stream", s.stream},
                       {"first_token_divergence", s.first_token_divergence},
                       {"first_logit_divergence", s.first_logit_divergence},
                       {"prefix_hit_tokens", s.prefix_hit_tokens}, {"preemptions", s.preemptions},
                       {"finish", s.finish}});
  }
  j["samples_detail"] = std::move(samples);
  return j;
}

absl::StatusOr<ModeResult> mode_from_json(const json& j, const std::string& file, const std::string& path) {
  JsonFields f(file, &j, path);
  ModeResult m;
  std::string mode;
  if (f.get("mode", &mode) && !parse_mode(mode)) f.fail("mode", "'" + mode + "' is not default or invariant");
  if (f.status().ok()) m.mode = *parse_mode(mode);
  f.get("samples", &m.samples);
  f.get("first_token_divergence", &m.earliest_token_divergence);
  f.get("first_logit_divergence", &m.earliest_logit_divergence);
  f.get("samples_token_diverged", &m.samples_token_diverged);
  f.get("samples_logit_diverged", &m.samples_logit_diverged);
  f.get("wall_seconds", &m.figures.wall_seconds);
  f.get("engine_steps", &m.figures.engine_steps);
  f.get("tokens_generated", &m.figures.tokens_generated);
  f.get("tokens_computed", &m.figures.tokens_computed);
  f.get("prefix_hit_tokens", &m.figures.prefix_hit_tokens);
  f.get("prefix_hit_requests", &m.figures.prefix_hit_requests);
  f.get("preemptions", &m.figures.preemptions);
  f.get_digest("schedule_digest", &m.figures.schedule_digest);
  if (f.has("timing")) timing_from_json(file, f, &m.figures);  // absent in results written before it existed
  if (const json* g = f.object("golden")) {
    JsonFields gf(file, g, f.field("golden"));
    gf.get("status", &m.golden.state);
    gf.get("detail", &m.golden.detail);
    f.merge(gf.status());
  }
  if (const json* groups = f.array("completions")) {
    // The unique completions: a repeated token list would be one completion counted twice (and
    // the fork tree could never tell its copies apart).
    absl::flat_hash_map<std::vector<int32_t>, size_t> first_with;
    for (size_t i = 0; i < groups->size(); ++i) {
      JsonFields gf(file, &(*groups)[i], absl::StrCat(f.field("completions"), "[", i, "]"));
      CompletionGroup g;
      gf.get("count", &g.count);
      gf.get("logit_streams", &g.logit_streams);
      gf.get("first_sample", &g.first_sample);
      gf.get("fork_position", &g.fork_position);
      if (gf.has("text")) gf.get("text", &g.text);
      gf.get("text_before", &g.text_before);
      gf.get("text_main", &g.text_main);
      gf.get("text_this", &g.text_this);
      if (const json* t = gf.array("tokens")) {
        for (const auto& v : *t) {
          if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
            gf.fail("tokens", json_shown(v) + " is not a token id");
            break;
          }
          g.tokens.push_back(v.get<int32_t>());
        }
      }
      if (gf.status().ok() && gf.has("tokens")) {
        auto [it, fresh] = first_with.try_emplace(g.tokens, i);
        if (!fresh) gf.fail("tokens", absl::StrCat("the same tokens as completions[", it->second, "] (completions are unique)"));
      }
      f.merge(gf.status());
      m.groups.push_back(std::move(g));
    }
  }
  if (const json* streams = f.array("streams")) {
    for (size_t i = 0; i < streams->size(); ++i) {
      JsonFields sf(file, &(*streams)[i], absl::StrCat(f.field("streams"), "[", i, "]"));
      LogitStream s;
      sf.get_digest("digest", &s.digest);
      sf.get("count", &s.count);
      sf.get("completion", &s.completion);
      std::string steps;
      if (sf.get("steps", &steps)) {
        auto parsed = parse_digest_list_hex(steps);
        if (!parsed) sf.fail("steps", "is not a list of 16-digit hex digests");
        else s.steps = std::move(*parsed);
      }
      if (sf.status().ok() && (s.completion < 0 || s.completion >= int(m.groups.size())))
        sf.fail("completion", absl::StrCat(s.completion, " names no completion"));
      f.merge(sf.status());
      m.streams.push_back(std::move(s));
    }
  }
  if (const json* samples = f.array("samples_detail")) {
    for (size_t i = 0; i < samples->size(); ++i) {
      JsonFields sf(file, &(*samples)[i], absl::StrCat(f.field("samples_detail"), "[", i, "]"));
      SampleSummary s;
      sf.get("sample", &s.sample);
      sf.get("completion", &s.completion);
      sf.get("stream", &s.stream);
      sf.get("first_token_divergence", &s.first_token_divergence);
      sf.get("first_logit_divergence", &s.first_logit_divergence);
      sf.get("prefix_hit_tokens", &s.prefix_hit_tokens);
      sf.get("preemptions", &s.preemptions);
      sf.get("finish", &s.finish);
      if (sf.status().ok() && (s.completion < 0 || s.completion >= int(m.groups.size())))
        sf.fail("completion", absl::StrCat(s.completion, " names no completion"));
      if (sf.status().ok() && (s.stream < 0 || s.stream >= int(m.streams.size())))
        sf.fail("stream", absl::StrCat(s.stream, " names no logit stream"));
      f.merge(sf.status());
      m.per_sample.push_back(std::move(s));
    }
  }
  if (!f.status().ok()) return f.status();
  return m;
}

}  // namespace

json results_to_json(const RunResults& r) {
  json j;
  j["samebits_results"] = kResultsSchema;
  j["identity"] = identity_to_json(r.identity);
  j["modes"] = json::array();
  for (const auto& m : r.modes) j["modes"].push_back(mode_to_json(m));
  return j;
}

absl::StatusOr<RunResults> results_from_json(const json& j, const std::string& file) {
  JsonFields f(file, &j, "");
  RunResults r;
  int schema = 0;
  if (f.get("samebits_results", &schema) && schema != kResultsSchema)
    f.fail("samebits_results", absl::StrCat(schema, " is not a known results schema (expected ", kResultsSchema, ")"));
  if (!read_identity_member(f, &r.identity)) return f.status();
  if (const json* modes = f.array("modes")) {
    for (size_t i = 0; i < modes->size() && f.status().ok(); ++i) {
      auto m = mode_from_json((*modes)[i], file, absl::StrCat("modes[", i, "]"));
      if (!m.ok()) return m.status();
      r.modes.push_back(std::move(*m));
    }
  }
  if (!f.status().ok()) return f.status();
  return r;
}

absl::StatusOr<RunResults> read_results_file(const std::string& path) {
  json j;
  if (absl::Status s = read_json_file(path, &j); !s.ok()) return s;
  return results_from_json(j, path);
}

absl::Status write_results_file(const RunResults& results, const std::string& path, OutputFiles* outputs) {
  const std::string text = json_text(results_to_json(results), 1) + "\n";
  return outputs ? outputs->stage(path, text) : write_file_atomically(path, text);
}

}  // namespace samebits
