#include "harness/scenario/trace.h"

#include "absl/strings/str_cat.h"
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

template <typename T>
bool int_list(const json& j, std::vector<T>* out) {
  if (!j.is_array()) return false;
  for (const auto& v : j) {
    if (!v.is_number_integer()) return false;
    out->push_back(v.get<T>());
  }
  return true;
}

bool record_from_json(const json& j, StepRecord* r) {
  if (!j.is_object() || !j.contains("i") || !j["i"].is_number_integer() || !j.contains("e") || !j["e"].is_array())
    return false;
  r->index = j["i"].get<int64_t>();
  for (const auto& e : j["e"]) {
    if (!e.is_array() || e.size() != 5) return false;
    for (int k = 0; k < 4; ++k)
      if (!e[size_t(k)].is_number_integer()) return false;
    StepRecord::Entry entry;
    entry.request_id = e[0].get<uint64_t>();
    entry.start_position = e[1].get<int32_t>();
    entry.num_tokens = e[2].get<int32_t>();
    entry.samples = e[3].get<int>() != 0;
    if (!int_list(e[4], &entry.blocks)) return false;
    r->entries.push_back(std::move(entry));
  }
  return int_list(j.value("p", json::array()), &r->preempted) && int_list(j.value("a", json::array()), &r->admitted);
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
  if (const json* id = f.object("identity"); id && f.status().ok()) {
    auto identity = identity_from_json(*id, file, "identity");
    if (!identity.ok()) return identity.status();
    t.identity = std::move(*identity);
  }
  const int samples = t.identity.samples;
  if (const json* requests = f.array("requests")) {
    for (size_t i = 0; i < requests->size() && f.status().ok(); ++i) {
      JsonFields rf(file, &(*requests)[i], absl::StrCat("requests[", i, "]"));
      Arrival a;
      int64_t id = 0;
      rf.get("id", &id);
      a.spec.id = uint64_t(id);
      rf.get("sample", &a.sample);
      rf.get("step", &a.step);
      rf.get("max_new_tokens", &a.spec.max_new_tokens);
      rf.get("stop_at_eos", &a.spec.stop_at_eos);
      rf.get("observe", &a.spec.observe);
      if (const json* p = rf.array("prompt"); p && !int_list(*p, &a.spec.prompt)) rf.fail("prompt", "is not a list of token ids");
      if (const json* s = rf.object("sampling")) {
        JsonFields sf(file, s, rf.field("sampling"));
        double temperature = 0, top_p = 1;
        int64_t seed = 0;
        sf.get("temperature", &temperature);
        sf.get("top_k", &a.spec.sampling.top_k);
        sf.get("top_p", &top_p);
        sf.get("seed", &seed);
        a.spec.sampling.temperature = float(temperature);
        a.spec.sampling.top_p = float(top_p);
        a.spec.sampling.seed = uint64_t(seed);
        rf.merge(sf.status());
      }
      if (rf.status().ok() && (a.sample < -1 || a.sample >= samples))
        rf.fail("sample", absl::StrCat(a.sample, " is not a sample index"));
      f.merge(rf.status());
      t.requests.push_back(std::move(a));
    }
  }
  if (const json* runs = f.array("runs")) {
    for (size_t i = 0; i < runs->size() && f.status().ok(); ++i) {
      JsonFields rf(file, &(*runs)[i], absl::StrCat("runs[", i, "]"));
      TraceRun r;
      std::string mode;
      if (rf.get("mode", &mode)) {
        if (auto m = parse_mode(mode)) r.mode = *m;
        else rf.fail("mode", "'" + mode + "' is not default or invariant");
      }
      if (const json* s = rf.array("submitted")) {
        for (const auto& v : *s) {
          if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer()) {
            rf.fail("submitted", v.dump() + " is not [engine_step, request_id]");
            break;
          }
          r.submitted.push_back({v[0].get<int64_t>(), v[1].get<uint64_t>()});
        }
      }
      if (const json* recs = rf.array("records")) {
        for (size_t k = 0; k < recs->size(); ++k) {
          StepRecord rec;
          if (!record_from_json((*recs)[k], &rec)) {
            rf.fail(absl::StrCat("records[", k, "]"), "is not a step record");
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

absl::Status write_trace(const Trace& trace, const std::string& path) {
  return write_file_atomically(path, trace_to_json(trace).dump() + "\n");
}

absl::StatusOr<Trace> read_trace(const std::string& path) {
  json j;
  if (absl::Status s = read_json_file(path, &j); !s.ok()) return s;
  return trace_from_json(j, path);
}

}  // namespace samebits
