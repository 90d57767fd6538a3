// The run identity (harness/golden/run_identity.h) on its own: JSON round trip, the reason
// incomparability() gives for each field, which fields each mode depends on (and the inverse: the
// fields it must ignore), the target hash's inputs, and malformed identity blocks rejected with one
// line naming file and field.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "harness/golden/run_identity.h"

namespace samebits::testing {
namespace {

// Every field set, none at its default.
RunIdentity full_identity() {
  RunIdentity id;
  id.scenario = {"feynman", "scenarios/feynman.yaml", 0x1111222233334444ull, 0x5555666677778888ull};
  id.model = {"builtin", "builtin: trained tiny Qwen3", 0x9999aaaabbbbccccull};
  id.backend = {"cuda", "cuda-sm90", "NVIDIA H200, 132 SMs", {"NVIDIA H200", 132, "13.0", "13.1.0"}, 3};
  id.engine = {8, 2048, 96, 24, 16, false, 66};
  id.threads = 5;
  id.live = true;
  id.samples = 12;
  return id;
}

struct FieldCase {
  std::string field;                  // as incomparability() names it ("" = never compared)
  void (*change)(RunIdentity*);
  bool invariant;                     // can change invariant bits: invariant goldens depend on it
  std::string values;                 // "(golden ..., run ...)" for the one-line reason
};
void PrintTo(const FieldCase& c, std::ostream* os) { *os << (c.field.empty() ? "(never compared)" : c.field); }

const FieldCase kFields[] = {
    {"backend.id", [](RunIdentity* r) { r->backend.id = "cuda-sm100"; }, true, "(golden 'cuda-sm90', run 'cuda-sm100')"},
    {"backend.kernel_set_version", [](RunIdentity* r) { r->backend.kernel_set_version = 4; }, true, "(golden 3, run 4)"},
    {"model.weights_digest", [](RunIdentity* r) { r->model.weights_digest = 1; }, true,
     "(golden 9999aaaabbbbcccc, run 0000000000000001)"},
    {"scenario.target_hash", [](RunIdentity* r) { r->scenario.target_hash = 2; }, true,
     "(golden 5555666677778888, run 0000000000000002)"},
    {"samples", [](RunIdentity* r) { r->samples = 13; }, true, "(golden 12, run 13)"},
    {"backend.device.name", [](RunIdentity* r) { r->backend.device.name = "NVIDIA H100"; }, false,
     "(golden 'NVIDIA H200', run 'NVIDIA H100')"},
    {"backend.device.sm_count", [](RunIdentity* r) { r->backend.device.sm_count = 114; }, false, "(golden 132, run 114)"},
    {"backend.device.cuda_runtime", [](RunIdentity* r) { r->backend.device.cuda_runtime = "13.1"; }, false,
     "(golden '13.0', run '13.1')"},
    {"backend.device.cublaslt", [](RunIdentity* r) { r->backend.device.cublaslt = "13.2.0"; }, false,
     "(golden '13.1.0', run '13.2.0')"},
    {"model.spec", [](RunIdentity* r) { r->model.spec = "models/other"; }, false, "(golden 'builtin', run 'models/other')"},
    {"scenario.file_hash", [](RunIdentity* r) { r->scenario.file_hash = 3; }, false,
     "(golden 1111222233334444, run 0000000000000003)"},
    {"engine.block_size", [](RunIdentity* r) { r->engine.block_size = 16; }, false, "(golden 8, run 16)"},
    {"engine.kv_blocks", [](RunIdentity* r) { r->engine.kv_blocks = 1024; }, false, "(golden 2048, run 1024)"},
    {"engine.max_tokens_per_step", [](RunIdentity* r) { r->engine.max_tokens_per_step = 64; }, false, "(golden 96, run 64)"},
    {"engine.max_seqs", [](RunIdentity* r) { r->engine.max_seqs = 8; }, false, "(golden 24, run 8)"},
    {"engine.max_chunk", [](RunIdentity* r) { r->engine.max_chunk = 0; }, false, "(golden 16, run 0)"},
    {"engine.prefix_cache", [](RunIdentity* r) { r->engine.prefix_cache = true; }, false, "(golden false, run true)"},
    {"engine.parallel_units", [](RunIdentity* r) { r->engine.parallel_units = 132; }, false, "(golden 66, run 132)"},
    // For people, or not part of the bits in either mode.
    {"", [](RunIdentity* r) { r->scenario.name = "other"; }, false, ""},
    {"", [](RunIdentity* r) { r->scenario.file = "elsewhere/feynman.yaml"; }, false, ""},
    {"", [](RunIdentity* r) { r->model.description = "other words"; }, false, ""},
    {"", [](RunIdentity* r) { r->backend.name = "mutation-gate"; }, false, ""},
    {"", [](RunIdentity* r) { r->backend.description = "other words"; }, false, ""},
    {"", [](RunIdentity* r) { r->threads = 1; }, false, ""},
    {"", [](RunIdentity* r) { r->live = false; }, false, ""},
};

TEST(RunIdentity, JsonRoundTripKeepsEveryField) {
  const RunIdentity id = full_identity();
  const nlohmann::json j = identity_to_json(id);
  auto back = identity_from_json(j, "x.json", "identity");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(identity_to_json(*back), j);
  // Field by field (the JSON comparison above would miss a field that neither side writes).
  EXPECT_EQ(back->scenario.name, id.scenario.name);
  EXPECT_EQ(back->scenario.file, id.scenario.file);
  EXPECT_EQ(back->scenario.file_hash, id.scenario.file_hash);
  EXPECT_EQ(back->scenario.target_hash, id.scenario.target_hash);
  EXPECT_EQ(back->model.spec, id.model.spec);
  EXPECT_EQ(back->model.description, id.model.description);
  EXPECT_EQ(back->model.weights_digest, id.model.weights_digest);
  EXPECT_EQ(back->backend.name, id.backend.name);
  EXPECT_EQ(back->backend.id, id.backend.id);
  EXPECT_EQ(back->backend.description, id.backend.description);
  EXPECT_EQ(back->backend.device.name, id.backend.device.name);
  EXPECT_EQ(back->backend.device.sm_count, id.backend.device.sm_count);
  EXPECT_EQ(back->backend.device.cuda_runtime, id.backend.device.cuda_runtime);
  EXPECT_EQ(back->backend.device.cublaslt, id.backend.device.cublaslt);
  EXPECT_EQ(back->backend.kernel_set_version, id.backend.kernel_set_version);
  EXPECT_EQ(back->engine.block_size, id.engine.block_size);
  EXPECT_EQ(back->engine.kv_blocks, id.engine.kv_blocks);
  EXPECT_EQ(back->engine.max_tokens_per_step, id.engine.max_tokens_per_step);
  EXPECT_EQ(back->engine.max_seqs, id.engine.max_seqs);
  EXPECT_EQ(back->engine.max_chunk, id.engine.max_chunk);
  EXPECT_EQ(back->engine.prefix_cache, id.engine.prefix_cache);
  EXPECT_EQ(back->engine.parallel_units, id.engine.parallel_units);
  EXPECT_EQ(back->threads, id.threads);
  EXPECT_EQ(back->live, id.live);
  EXPECT_EQ(back->samples, id.samples);
  for (Mode mode : {Mode::kDefault, Mode::kInvariant}) EXPECT_EQ(incomparability(id, *back, mode), "");
}

class IdentityField : public ::testing::TestWithParam<FieldCase> {};

TEST_P(IdentityField, DefaultModeNamesTheFieldWithBothValues) {
  const FieldCase& c = GetParam();
  RunIdentity run = full_identity();
  c.change(&run);
  const std::string why = incomparability(full_identity(), run, Mode::kDefault);
  if (c.field.empty()) {
    EXPECT_EQ(why, "") << "a field for people, or one no bit depends on, made runs incomparable";
  } else {
    EXPECT_EQ(why, c.field + " differs " + c.values);
  }
}

TEST_P(IdentityField, InvariantModeDependsOnlyOnWhatCanChangeInvariantBits) {
  const FieldCase& c = GetParam();
  RunIdentity run = full_identity();
  c.change(&run);
  const std::string why = incomparability(full_identity(), run, Mode::kInvariant);
  if (c.invariant) {
    EXPECT_EQ(why, c.field + " differs " + c.values);
  } else {
    EXPECT_EQ(why, "") << "invariant bits cannot depend on it";
  }
}

INSTANTIATE_TEST_SUITE_P(Fields, IdentityField, ::testing::ValuesIn(kFields), [](const auto& info) {
  std::string name = info.param.field.empty() ? "never_compared_" + std::to_string(info.index) : info.param.field;
  for (char& ch : name)
    if (ch == '.') ch = '_';
  return name;
});

TEST(RunIdentity, TheFirstDifferingFieldIsNamedInvariantFieldsFirst) {
  RunIdentity run = full_identity();
  run.engine.max_seqs = 1;
  run.model.weights_digest = 7;
  EXPECT_EQ(incomparability(full_identity(), run, Mode::kDefault).rfind("model.weights_digest differs", 0), 0u);
}

Scenario scenario_of(const std::string& text) {
  auto s = parse_scenario(text, "s.yaml");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : Scenario{};
}

TEST(TargetRequestsHash, FollowsWhatTheTargetsAskForAndNothingElse) {
  const std::string base =
      "name: t\nprompt: \"hello\"\nsamples: 4\nmax_new_tokens: 8\nstop_at_eos: false\n"
      "sampling: {temperature: 0.5, top_k: 4, top_p: 0.9, seed: 1}\n";
  const uint64_t h = target_requests_hash(scenario_of(base));
  struct Edit {
    std::string from, to;
    bool changes;
  };
  const Edit edits[] = {
      {"prompt: \"hello\"", "prompt: \"hellO\"", true},
      {"max_new_tokens: 8", "max_new_tokens: 9", true},
      {"stop_at_eos: false", "stop_at_eos: true", true},
      {"temperature: 0.5", "temperature: 0.6", true},
      {"top_k: 4", "top_k: 5", true},
      {"top_p: 0.9", "top_p: 0.8", true},
      {"seed: 1}", "seed: 2}", true},
      {"prompt: \"hello\"", "prompt_tokens: [104, 101]", true},
      // The sample count is its own identity field; traffic and engine settings are not targets.
      {"samples: 4", "samples: 5", false},
      {"name: t", "name: t\nengine: {max_seqs: 3, max_chunk: 2}\nmix: {background: 5}", false},
  };
  for (const Edit& e : edits) {
    std::string text = base;
    text.replace(text.find(e.from), e.from.size(), e.to);
    EXPECT_EQ(target_requests_hash(scenario_of(text)) != h, e.changes) << e.from << " -> " << e.to;
  }
  // prompt_tokens and chat messages: every token and every message counts.
  const std::string tokens = "name: t\nsamples: 1\nmax_new_tokens: 4\nprompt_tokens: [1, 2, 3]\n";
  const uint64_t ht = target_requests_hash(scenario_of(tokens));
  EXPECT_NE(ht, target_requests_hash(scenario_of("name: t\nsamples: 1\nmax_new_tokens: 4\nprompt_tokens: [1, 2, 4]\n")));
  EXPECT_NE(ht, target_requests_hash(scenario_of("name: t\nsamples: 1\nmax_new_tokens: 4\nprompt_tokens: [1, 2]\n")));
  const std::string chat = "name: t\nsamples: 1\nmax_new_tokens: 4\nmessages: [{role: user, content: hi}]\n";
  EXPECT_NE(target_requests_hash(scenario_of(chat)),
            target_requests_hash(scenario_of("name: t\nsamples: 1\nmax_new_tokens: 4\nmessages: [{role: user, content: ho}]\n")));
  EXPECT_NE(target_requests_hash(scenario_of(chat)),
            target_requests_hash(scenario_of("name: t\nsamples: 1\nmax_new_tokens: 4\nmessages: [{role: system, content: hi}]\n")));
}

struct MalformedIdentity {
  std::string name;
  void (*mutate)(nlohmann::json*);
  std::string expect;  // the whole message
};

TEST(RunIdentity, MalformedBlocksAreRejectedWithOneLineNamingFileAndField) {
  const MalformedIdentity cases[] = {
      {"not an object", [](nlohmann::json* j) { *j = 3; }, "f.json: identity: 3 is not an object"},
      {"no scenario", [](nlohmann::json* j) { j->erase("scenario"); }, "f.json: identity.scenario: missing"},
      {"scenario name", [](nlohmann::json* j) { (*j)["scenario"]["name"] = 5; },
       "f.json: identity.scenario.name: 5 is not a string"},
      {"file hash", [](nlohmann::json* j) { (*j)["scenario"]["file_hash"] = "12"; },
       "f.json: identity.scenario.file_hash: '12' is not a digest (16 lowercase hex digits)"},
      {"weights", [](nlohmann::json* j) { (*j)["model"].erase("weights_digest"); },
       "f.json: identity.model.weights_digest: missing"},
      {"backend id", [](nlohmann::json* j) { (*j)["backend"]["id"] = nullptr; },
       "f.json: identity.backend.id: null is not a string"},
      {"device", [](nlohmann::json* j) { (*j)["backend"]["device"] = "H200"; },
       "f.json: identity.backend.device: \"H200\" is not an object"},
      {"sm count", [](nlohmann::json* j) { (*j)["backend"]["device"]["sm_count"] = 1.5; },
       "f.json: identity.backend.device.sm_count: 1.5 is not an integer"},
      {"block size", [](nlohmann::json* j) { (*j)["engine"]["block_size"] = 0; },
       "f.json: identity.engine.block_size: 0 is not in [1, 4096]"},
      {"threads", [](nlohmann::json* j) { (*j)["engine"]["threads"] = -1; },
       "f.json: identity.engine.threads: -1 is not in [0, 1024]"},
      {"live", [](nlohmann::json* j) { (*j)["engine"]["live"] = "yes"; },
       "f.json: identity.engine.live: \"yes\" is not a boolean"},
      {"samples", [](nlohmann::json* j) { (*j)["samples"] = 0; }, "f.json: identity.samples: 0 is not in [1, 100000]"},
  };
  const nlohmann::json good = identity_to_json(full_identity());
  for (const MalformedIdentity& c : cases) {
    SCOPED_TRACE(c.name);
    nlohmann::json bad = good;
    c.mutate(&bad);
    nlohmann::json file = {{"identity", bad}};
    JsonFields f("f.json", &file, "");
    RunIdentity out;
    EXPECT_FALSE(read_identity_member(f, &out));
    const std::string msg(f.status().message());
    EXPECT_EQ(msg, c.expect);
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
  // The member itself missing.
  nlohmann::json empty = nlohmann::json::object();
  JsonFields f("f.json", &empty, "");
  RunIdentity out;
  EXPECT_FALSE(read_identity_member(f, &out));
  EXPECT_EQ(f.status().message(), "f.json: identity: missing");
  // And the good block read through the same member reader.
  nlohmann::json file = {{"identity", good}};
  JsonFields ok("f.json", &file, "");
  ASSERT_TRUE(read_identity_member(ok, &out)) << ok.status();
  EXPECT_EQ(identity_to_json(out), good);
}

}  // namespace
}  // namespace samebits::testing
