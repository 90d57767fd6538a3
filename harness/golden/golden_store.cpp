#include "harness/golden/golden_store.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "harness/golden/digest.h"
#include "common/input_file.h"
#include "harness/golden/json_fields.h"

namespace samebits {

using nlohmann::json;

const GoldenMode* Golden::find(Mode m) const {
  for (const auto& g : modes)
    if (g.mode == m) return &g;
  return nullptr;
}

Golden golden_from_results(const RunResults& r) {
  Golden g;
  g.scenario = r.identity.scenario.name;
  g.identity = r.identity;
  for (const ModeResult& m : r.modes) {
    GoldenMode gm;
    gm.mode = m.mode;
    gm.samples = m.samples;
    gm.unique_completions = m.unique_completions();
    gm.unique_logit_streams = m.unique_logit_streams();
    for (const auto& s : m.streams) {
      gm.expected[s.digest] = s.count;
      std::vector<uint64_t> top;
      for (uint64_t d : s.steps) top.push_back(d & ~((uint64_t(1) << (64 - 4 * kGoldenStepHexDigits)) - 1));
      gm.stream_steps[s.digest] = std::move(top);
    }
    for (const auto& s : m.per_sample) gm.sample_digests.push_back(m.streams[size_t(s.stream)].digest);
    gm.first_token_divergence = m.earliest_token_divergence;
    gm.first_logit_divergence = m.earliest_logit_divergence;
    gm.samples_token_diverged = m.samples_token_diverged;
    gm.samples_logit_diverged = m.samples_logit_diverged;
    for (size_t i = 1; i < m.groups.size(); ++i) {
      const auto& c = m.groups[i];
      gm.forks.push_back({c.count, c.fork_position, c.text_before, c.text_main, c.text_this});
    }
    gm.main_completion_text = m.main_text();
    gm.schedule_digest = m.figures.schedule_digest;
    g.modes.push_back(std::move(gm));
  }
  return g;
}

json golden_to_json(const Golden& g) {
  json j;
  j["samebits_golden"] = kGoldenSchemaVersion;
  j["scenario"] = g.scenario;
  j["identity"] = identity_to_json(g.identity);
  j["modes"] = json::object();
  for (const auto& m : g.modes) {
    json jm;
    jm["samples"] = m.samples;
    jm["unique_completions"] = m.unique_completions;
    jm["unique_logit_streams"] = m.unique_logit_streams;
    if (m.mode == Mode::kInvariant && m.expected.size() == 1)
      jm["completion_digest"] = digest_hex(m.expected.begin()->first);
    json expected = json::object();
    for (const auto& [d, c] : m.expected) expected[digest_hex(d)] = c;
    jm["expected"] = std::move(expected);
    jm["sample_digests"] = digest_list_hex(m.sample_digests);
    json streams = json::object();
    for (const auto& [d, steps] : m.stream_steps) streams[digest_hex(d)] = digest_list_hex(steps, kGoldenStepHexDigits);
    jm["stream_steps"] = std::move(streams);
    json forks = json::array();
    for (const auto& f : m.forks)
      forks.push_back({{"count", f.count}, {"fork_position", f.fork_position}, {"text_before", f.text_before},
                       {"text_main", f.text_main}, {"text_this", f.text_this}});
    jm["fork_statistics"] = {{"first_token_divergence", m.first_token_divergence},
                             {"first_logit_divergence", m.first_logit_divergence},
                             {"samples_token_diverged", m.samples_token_diverged},
                             {"samples_logit_diverged", m.samples_logit_diverged},
                             {"forks", std::move(forks)}};
    jm["main_completion_text"] = m.main_completion_text;
    jm["schedule_digest"] = digest_hex(m.schedule_digest);
    j["modes"][std::string(mode_name(m.mode))] = std::move(jm);
  }
  return j;
}

namespace {

absl::StatusOr<GoldenMode> mode_from_json(const json& j, const std::string& file, const std::string& path, Mode mode) {
  JsonFields f(file, &j, path);
  GoldenMode m;
  m.mode = mode;
  f.get("samples", &m.samples);
  f.get("unique_completions", &m.unique_completions);
  f.get("unique_logit_streams", &m.unique_logit_streams);
  if (const json* e = f.object("expected")) {
    for (const auto& [k, v] : e->items()) {
      auto d = parse_digest_hex(k);
      if (!d) {
        f.fail("expected", "key '" + k + "' is not a digest (16 lowercase hex digits)");
        break;
      }
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > INT32_MAX) {
        f.fail("expected." + k, json_shown(v) + " is not a count in [1, 2^31-1]");
        break;
      }
      m.expected[*d] = v.get<int>();
    }
  }
  std::string sample_digests;
  if (f.get("sample_digests", &sample_digests)) {
    auto list = parse_digest_list_hex(sample_digests);
    if (!list) f.fail("sample_digests", "is not a list of 16-digit hex digests");
    else m.sample_digests = std::move(*list);
  }
  if (const json* s = f.object("stream_steps")) {
    for (const auto& [k, v] : s->items()) {
      auto d = parse_digest_hex(k);
      auto steps = v.is_string() ? parse_digest_list_hex(v.get<std::string>(), kGoldenStepHexDigits) : std::nullopt;
      if (!d || !steps) {
        f.fail("stream_steps." + k, "is not a digest with a list of 8-digit hex step digests");
        break;
      }
      m.stream_steps[*d] = std::move(*steps);
    }
  }
  if (const json* fs = f.object("fork_statistics")) {
    JsonFields ff(file, fs, f.field("fork_statistics"));
    ff.get("first_token_divergence", &m.first_token_divergence);
    ff.get("first_logit_divergence", &m.first_logit_divergence);
    ff.get("samples_token_diverged", &m.samples_token_diverged);
    ff.get("samples_logit_diverged", &m.samples_logit_diverged);
    if (const json* forks = ff.array("forks")) {
      for (size_t i = 0; i < forks->size(); ++i) {
        JsonFields kf(file, &(*forks)[i], absl::StrCat(ff.field("forks"), "[", i, "]"));
        GoldenFork fork;
        kf.get("count", &fork.count);
        kf.get("fork_position", &fork.fork_position);
        kf.get("text_before", &fork.text_before);
        kf.get("text_main", &fork.text_main);
        kf.get("text_this", &fork.text_this);
        ff.merge(kf.status());
        m.forks.push_back(std::move(fork));
      }
    }
    f.merge(ff.status());
  }
  f.get("main_completion_text", &m.main_completion_text);
  f.get_digest("schedule_digest", &m.schedule_digest);
  // Consistency: counts, sample list and streams must describe the same samples.
  if (f.status().ok()) {
    int total = 0;
    for (const auto& [d, c] : m.expected) total += c;
    if (int(m.sample_digests.size()) != m.samples)
      f.fail("sample_digests", absl::StrCat("holds ", m.sample_digests.size(), " digests for ", m.samples, " samples"));
    else if (total != m.samples)
      f.fail("expected", absl::StrCat("counts add up to ", total, ", not to samples (", m.samples, ")"));
    else if (int(m.expected.size()) != m.unique_logit_streams)
      f.fail("unique_logit_streams", absl::StrCat(m.unique_logit_streams, " differs from the ", m.expected.size(),
                                                  " expected digests"));
    for (uint64_t d : m.sample_digests) {
      if (!f.status().ok()) break;
      if (!m.expected.count(d)) f.fail("sample_digests", digest_hex(d) + " is not among the expected digests");
      else if (!m.stream_steps.count(d)) f.fail("stream_steps", digest_hex(d) + " is missing");
    }
    if (f.status().ok() && mode == Mode::kInvariant && f.has("completion_digest")) {
      uint64_t one = 0;
      if (f.get_digest("completion_digest", &one) && (m.expected.size() != 1 || !m.expected.count(one)))
        f.fail("completion_digest", digest_hex(one) + " is not the one expected digest");
    }
  }
  if (!f.status().ok()) return f.status();
  return m;
}

}  // namespace

absl::StatusOr<Golden> golden_from_json(const json& j, const std::string& file) {
  JsonFields f(file, &j, "");
  Golden g;
  int schema = 0;
  if (f.get("samebits_golden", &schema) && schema != kGoldenSchemaVersion)
    f.fail("samebits_golden", absl::StrCat(schema, " is not a known golden schema (expected ", kGoldenSchemaVersion, ")"));
  f.get("scenario", &g.scenario);
  if (!read_identity_member(f, &g.identity)) return f.status();
  if (const json* modes = f.object("modes")) {
    for (const auto& [name, value] : modes->items()) {
      auto mode = parse_mode(name);
      if (!mode) {
        f.fail("modes." + name, "is not a mode (default or invariant)");
        break;
      }
      auto m = mode_from_json(value, file, "modes." + name, *mode);
      if (!m.ok()) return m.status();
      g.modes.push_back(std::move(*m));
    }
  }
  if (!f.status().ok()) return f.status();
  return g;
}

std::string golden_path(const std::string& golden_dir, const std::string& scenario, const std::string& backend_id) {
  return (std::filesystem::path(golden_dir) / scenario / (backend_id + ".json")).string();
}

absl::StatusOr<std::optional<Golden>> read_golden(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<Golden>();
  json j;
  if (absl::Status s = read_json_file(path, &j); !s.ok()) return s;
  auto g = golden_from_json(j, path);
  if (!g.ok()) return g.status();
  return std::optional<Golden>(std::move(*g));
}

absl::Status write_golden(const Golden& golden, const std::string& path, OutputFiles* outputs) {
  const std::string text = json_text(golden_to_json(golden), 1) + "\n";
  return outputs ? outputs->stage(path, text) : write_file_atomically(path, text);
}

GoldenStatus check_mode(const std::optional<Golden>& golden, const RunResults& run, const ModeResult& mode) {
  const std::string name(mode_name(mode.mode));
  if (!golden) return {"none", "no golden file"};
  const GoldenMode* g = golden->find(mode.mode);
  if (!g) return {"none", "the golden has no " + name + " mode"};
  if (std::string why = incomparability(golden->identity, run.identity, mode.mode); !why.empty())
    return {"not comparable", why};
  if (run.identity.live && mode.mode == Mode::kDefault)
    return {"not comparable", "a live run's schedule is not the seeded one"};
  // Invariant bits do not depend on the schedule; default bits do, by design.
  if (!run.identity.live && mode.mode == Mode::kDefault && g->schedule_digest != mode.figures.schedule_digest)
    return {"not comparable", "the engine scheduled the seeded workload differently (schedule digest " +
                                  digest_hex(mode.figures.schedule_digest) + ", golden " + digest_hex(g->schedule_digest) +
                                  "): regenerate with golden update"};
  int differing = 0;
  std::string first;
  for (const SampleSummary& s : mode.per_sample) {
    const LogitStream& stream = mode.streams[size_t(s.stream)];
    // Live runs are checked against the set of expected digests (invariant: the one digest).
    const bool ok = run.identity.live ? g->expected.count(stream.digest) > 0
                             : (s.sample >= 0 && s.sample < int(g->sample_digests.size()) &&
                                g->sample_digests[size_t(s.sample)] == stream.digest);
    if (ok) continue;
    if (differing++ == 0) {
      uint64_t want = run.identity.live ? g->expected.begin()->first
                               : (s.sample < int(g->sample_digests.size()) ? g->sample_digests[size_t(s.sample)] : 0);
      auto steps = g->stream_steps.find(want);
      int step = steps == g->stream_steps.end() ? -1 : first_difference(stream.steps, steps->second, kGoldenStepHexDigits);
      first = absl::StrCat("sample ", s.sample, " first differs at step ", step, " (digest ", digest_hex(stream.digest),
                           ", golden ", digest_hex(want), ")");
    }
  }
  if (differing == 0) return {"pass", absl::StrCat(mode.samples, " samples match")};
  return {"mismatch", absl::StrCat(name, ": ", first, "; ", differing, " of ", mode.samples, " samples differ")};
}

bool check_against_golden(const std::optional<Golden>& golden, RunResults* run) {
  bool ok = true;
  for (ModeResult& m : run->modes) {
    m.golden = check_mode(golden, *run, m);
    ok = ok && m.golden.state != "mismatch";
  }
  return ok;
}

}  // namespace samebits
