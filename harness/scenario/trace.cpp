#include "harness/scenario/trace.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "common/input_file.h"
#include "harness/golden/digest.h"
#include "harness/golden/json_fields.h"

namespace samebits {

using nlohmann::json;

Trace make_trace(const RunIdentity& identity, const Workload& w) {
  Trace t;
  t.identity = identity;
  t.requests = w.arrivals;
  return t;
}

TraceRun trace_run_of(const ModeRun& run) {
  TraceRun r;
  r.mode = run.mode;
  r.submitted = run.submitted;
  r.records = run.records;
  for (const auto& t : run.targets) r.digests.push_back(t.digest);
  return r;
}

namespace {

json record_to_json(const StepRecord& r) {
  json entries = json::array();
  for (const auto& e : r.entries)
    entries.push_back(json::array({e.request_id, e.start_position, e.num_tokens, e.samples ? 1 : 0, e.blocks}));
  return {{"i", r.index}, {"e", std::move(entries)}, {"p", r.preempted}, {"a", r.admitted}};
}

// Request ids, token ids, positions and block numbers in a trace are never negative: a -1 must not
// become 2^64-1 nor a 2^40 wrap to 0 in an int32.
template <typename T>
bool int_in(const json& v, int64_t min, int64_t max, T* out) {
  if (!v.is_number_integer()) return false;
  const int64_t x = v.get<int64_t>();  // parse_json_text keeps every integer within int64
  if (x < min || x > max) return false;
  *out = T(x);
  return true;
}

template <typename T>
bool int_list(const json& j, int64_t min, int64_t max, std::vector<T>* out) {
  if (!j.is_array()) return false;
  for (const auto& v : j) {
    T x{};
    if (!int_in(v, min, max, &x)) return false;
    out->push_back(x);
  }
  return true;
}

// The record of engine step `index`, or a message saying what is wrong with it.
std::string record_from_json(const json& j, int64_t index, StepRecord* r) {
  if (!j.is_object() || !j.contains("i") || !j.contains("e") || !j["e"].is_array()) return "is not a step record";
  for (const auto& [key, value] : j.items())
    if (key != "i" && key != "e" && key != "p" && key != "a") return "has an unknown field '" + printable(key, 20) + "'";
  if (!int_in(j["i"], index, index, &r->index)) return absl::StrCat("i: ", json_shown(j["i"]), " is not ", index);
  for (const auto& e : j["e"]) {
    StepRecord::Entry entry;
    int flag = 0;
    if (!e.is_array() || e.size() != 5 || !int_in(e[0], 0, INT64_MAX, &entry.request_id) ||
        !int_in(e[1], 0, INT32_MAX, &entry.start_position) || !int_in(e[2], 1, INT32_MAX, &entry.num_tokens) ||
        !int_in(e[3], 0, 1, &flag) || !int_list(e[4], 0, INT32_MAX, &entry.blocks))
      return absl::StrCat("e: ", json_shown(e),
                          " is not [request id, start position, tokens >= 1, samples 0 or 1, [blocks]]");
    entry.samples = flag != 0;
    r->entries.push_back(std::move(entry));
  }
  if (!int_list(j.value("p", json::array()), 0, INT64_MAX, &r->preempted)) return "p: is not a list of request ids";
  if (!int_list(j.value("a", json::array()), 0, INT64_MAX, &r->admitted)) return "a: is not a list of request ids";
  return "";
}

}  // namespace

json trace_to_json(const Trace& t) {
  json j;
  j["samebits_trace"] = kTraceVersion;
  j["identity"] = identity_to_json(t.identity);
  json requests = json::array();
  for (const Arrival& a : t.requests) {
    const RequestSpec& s = a.spec;
    requests.push_back({{"id", s.id}, {"sample", a.sample}, {"step", a.step}, {"prompt", s.prompt},
                        {"max_new_tokens", s.max_new_tokens}, {"stop_at_eos", s.stop_at_eos},
                        {"observe", s.observe},
                        {"sampling", {{"temperature", s.sampling.temperature}, {"top_k", s.sampling.top_k},
                                      {"top_p", s.sampling.top_p}, {"seed", s.sampling.seed}}}});
  }
  j["requests"] = std::move(requests);
  j["runs"] = json::array();
  for (const TraceRun& r : t.runs) {
    json submitted = json::array();
    for (const auto& s : r.submitted) submitted.push_back(json::array({s.engine_step, s.request_id}));
    json records = json::array();
    for (const auto& rec : r.records) records.push_back(record_to_json(rec));
    j["runs"].push_back({{"mode", std::string(mode_name(r.mode))}, {"submitted", std::move(submitted)},
                         {"records", std::move(records)}, {"digests", digest_list_hex(r.digests)}});
  }
  return j;
}

absl::StatusOr<Trace> trace_from_json(const json& j, const std::string& file) {
  JsonFields f(file, &j, "");
  Trace t;
  int version = 0;
  if (f.get("samebits_trace", &version) && version != kTraceVersion)
    f.fail("samebits_trace", absl::StrCat(version, " is not a known trace version (expected ", kTraceVersion, ")"));
  if (!read_identity_member(f, &t.identity)) return f.status();
  const int samples = t.identity.samples;
  std::set<uint64_t> ids;
  std::set<int> target_samples;
  if (const json* requests = f.array("requests")) {
    for (size_t i = 0; i < requests->size() && f.status().ok(); ++i) {
      JsonFields rf(file, &(*requests)[i], absl::StrCat("requests[", i, "]"));
      Arrival a;
      int64_t id = 0;
      if (rf.get("id", &id) && (id < 0 || !ids.insert(uint64_t(id)).second))
        rf.fail("id", absl::StrCat(id, id < 0 ? " is negative" : " is used by an earlier request"));
      a.spec.id = uint64_t(id);
      rf.get("sample", &a.sample);
      rf.get("step", &a.step);
      rf.get("max_new_tokens", &a.spec.max_new_tokens);
      rf.get("stop_at_eos", &a.spec.stop_at_eos);
      rf.get("observe", &a.spec.observe);
      if (rf.status().ok() && a.step < 0) rf.fail("step", absl::StrCat(a.step, " is negative"));
      if (const json* p = rf.array("prompt"); p && !int_list(*p, 0, INT32_MAX, &a.spec.prompt))
        rf.fail("prompt", "is not a list of token ids");
      if (const json* s = rf.object("sampling")) {
        JsonFields sf(file, s, rf.field("sampling"));
        double temperature = 0, top_p = 1;
        int64_t seed = 0;
        // The scenario's ranges: a value beyond a float (top_p 1e300) would become infinity here
        // and the trace could not be written back; a negative seed would be written as an
        // unsigned number above 2^63-1, which no JSON reader of the project takes back.
        sf.get("temperature", &temperature, 0, kMaxTemperature);
        sf.get("top_k", &a.spec.sampling.top_k, 0, kMaxTopK);
        sf.get("top_p", &top_p, kMinTopP, 1);
        sf.get("seed", &seed, 0, INT64_MAX);
        a.spec.sampling.temperature = float(temperature);
        a.spec.sampling.top_p = float(top_p);
        a.spec.sampling.seed = uint64_t(seed);
        rf.merge(sf.status());
      }
      if (rf.status().ok() && (a.sample < -1 || a.sample >= samples))
        rf.fail("sample", absl::StrCat(a.sample, " is not a sample index"));
      if (rf.status().ok() && a.sample >= 0 && !target_samples.insert(a.sample).second)
        rf.fail("sample", absl::StrCat(a.sample, " is the target of an earlier request"));
      f.merge(rf.status());
      t.requests.push_back(std::move(a));
    }
  }
  const json* runs = f.array("runs");
  if (runs && runs->empty()) f.fail("runs", "is empty (a trace records at least one mode's run)");
  if (runs) {
    for (size_t i = 0; i < runs->size() && f.status().ok(); ++i) {
      JsonFields rf(file, &(*runs)[i], absl::StrCat("runs[", i, "]"));
      TraceRun r;
      std::string mode;
      if (rf.get("mode", &mode)) {
        if (auto m = parse_mode(mode)) r.mode = *m;
        else rf.fail("mode", "'" + printable(mode, 40) + "' is not default or invariant");
        for (const TraceRun& earlier : t.runs)
          if (rf.status().ok() && earlier.mode == r.mode) rf.fail("mode", "'" + mode + "' is recorded twice");
      }
      if (const json* s = rf.array("submitted")) {
        for (const auto& v : *s) {
          SubmittedAt at;
          const int64_t after = r.submitted.empty() ? 0 : r.submitted.back().engine_step;
          if (!v.is_array() || v.size() != 2 || !int_in(v[0], after, INT64_MAX, &at.engine_step) ||
              !int_in(v[1], 0, INT64_MAX, &at.request_id)) {
            rf.fail("submitted", json_shown(v) + " is not [engine_step (in order), request_id]");
            break;
          }
          r.submitted.push_back(at);
        }
      }
      if (const json* recs = rf.array("records")) {
        for (size_t k = 0; k < recs->size(); ++k) {
          StepRecord rec;
          if (std::string why = record_from_json((*recs)[k], int64_t(k), &rec); !why.empty()) {
            rf.fail(absl::StrCat("records[", k, "]"), why);
            break;
          }
          r.records.push_back(std::move(rec));
        }
      }
      std::string digests;
      if (rf.get("digests", &digests)) {
        auto list = parse_digest_list_hex(digests);
        if (!list || int(list->size()) != samples) rf.fail("digests", absl::StrCat("is not a list of ", samples, " digests"));
        else r.digests = std::move(*list);
      }
      f.merge(rf.status());
      t.runs.push_back(std::move(r));
    }
  }
  if (!f.status().ok()) return f.status();
  return t;
}

absl::Status write_trace(const Trace& trace, const std::string& path, OutputFiles* outputs) {
  const std::string text = json_text(trace_to_json(trace)) + "\n";
  return outputs ? outputs->stage(path, text) : write_file_atomically(path, text);
}

absl::StatusOr<Trace> read_trace(const std::string& path) {
  json j;
  if (absl::Status s = read_json_file(path, &j); !s.ok()) return s;
  return trace_from_json(j, path);
}

}  // namespace samebits
