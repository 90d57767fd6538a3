// Every damaged checkpoint the loader must refuse, generated here in a temporary directory: one
// case per fault, each demanding a one-line error that names the file and (where one is at fault)
// the tensor, and the phrase that says what is wrong.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "models/tiny_qwen/checkpoint.h"
#include "tests/model/hf_checkpoint_writer.h"

namespace samebits {
namespace {

using nlohmann::json;
namespace t = samebits::testing;

constexpr char kVictim[] = "model.layers.1.mlp.up_proj.weight";

struct BadCase {
  std::string name;
  int shards = 1;
  // Damages the checkpoint in `dir` after a valid one has been written.
  std::function<void(const std::string& dir)> damage;
  std::string file;    // file the message must name (relative to the directory)
  std::string tensor;  // tensor the message must name ("" when none is at fault)
  std::string phrase;  // what is wrong
};

std::string path_in(const std::string& dir, const std::string& file) { return (std::filesystem::path(dir) / file).string(); }

// Rewrites model.safetensors of a single-file checkpoint with an edited header / entries.
void rewrite_single(const std::string& dir, const std::function<void(std::vector<t::StEntry>&)>& edit_entries,
                    const std::function<void(json&)>& edit_header = {}) {
  auto entries = t::checkpoint_entries(t::small_qwen3_config(), "BF16");
  if (edit_entries) edit_entries(entries);
  t::write_file(path_in(dir, "model.safetensors"), t::safetensors_bytes(entries, edit_header));
}

void edit_config(const std::string& dir, const std::function<void(json&)>& edit) {
  json j = t::hf_config_json(t::small_qwen3_config());
  edit(j);
  t::write_file(path_in(dir, "config.json"), j.dump());
}

void truncate_to(const std::string& path, int64_t keep_or_minus) {
  std::string bytes = t::read_file(path);
  const size_t keep = keep_or_minus >= 0 ? size_t(keep_or_minus) : bytes.size() - size_t(-keep_or_minus);
  t::write_file(path, bytes.substr(0, keep));
}

uint64_t header_length(const std::string& path) {
  uint64_t n = 0;
  std::memcpy(&n, t::read_file(path).data(), 8);
  return n;
}

std::vector<BadCase> bad_cases() {
  std::vector<BadCase> cases;
  const std::string st = "model.safetensors";
  // The last tensor in the data section (the writer lays tensors out in name order).
  const std::string last_tensor = expected_tensor_shapes(t::small_qwen3_config()).rbegin()->first;
  cases.push_back({"truncated_data", 1, [=](const std::string& d) { truncate_to(path_in(d, st), -10); }, st,
                   last_tensor, "file truncated"});
  cases.push_back({"truncated_to_4_bytes", 1, [=](const std::string& d) { truncate_to(path_in(d, st), 4); }, st, "",
                   "file truncated"});
  cases.push_back({"truncated_inside_header", 1,
                   [=](const std::string& d) { truncate_to(path_in(d, st), 8 + int64_t(header_length(path_in(d, st)) / 2)); },
                   st, "", "header length"});
  cases.push_back({"header_length_huge", 1,
                   [=](const std::string& d) {
                     std::string b = t::read_file(path_in(d, st));
                     const uint64_t huge = uint64_t(1) << 60;
                     std::memcpy(b.data(), &huge, 8);
                     t::write_file(path_in(d, st), b);
                   },
                   st, "", "header length 1152921504606846976 is out of range"});
  cases.push_back({"header_not_json", 1,
                   [=](const std::string& d) {
                     std::string b = t::read_file(path_in(d, st));
                     b[8] = '[';  // '{' becomes '[' : the JSON no longer parses
                     t::write_file(path_in(d, st), b);
                   },
                   st, "", "(header): (syntax): not valid JSON"});
  cases.push_back({"offsets_out_of_range", 1,
                   [=](const std::string& d) {
                     rewrite_single(d, {}, [](json& h) {
                       auto& o = h[kVictim]["data_offsets"];
                       const uint64_t n = o[1].get<uint64_t>() - o[0].get<uint64_t>();
                       o = {uint64_t(1) << 32, (uint64_t(1) << 32) + n};
                     });
                   },
                   st, kVictim, "out of range"});
  cases.push_back({"offsets_reversed", 1,
                   [=](const std::string& d) {
                     rewrite_single(d, {}, [](json& h) {
                       auto& o = h[kVictim]["data_offsets"];
                       o = {o[1], o[0]};
                     });
                   },
                   st, kVictim, "out of range (end before begin)"});
  cases.push_back({"offsets_disagree_with_shape", 1,
                   [=](const std::string& d) {
                     rewrite_single(d, {}, [](json& h) { h[kVictim]["shape"] = {32, 15}; });
                   },
                   st, kVictim, "needs 960"});
  cases.push_back({"offsets_overlap", 1,
                   [=](const std::string& d) {
                     rewrite_single(d, {}, [](json& h) {
                       h[kVictim]["data_offsets"] = h["model.embed_tokens.weight"]["data_offsets"];
                       h[kVictim]["shape"] = h["model.embed_tokens.weight"]["shape"];
                     });
                   },
                   st, kVictim, "overlap"});
  cases.push_back({"dtype_f64", 1,
                   [=](const std::string& d) {
                     rewrite_single(d, {}, [](json& h) { h[kVictim]["dtype"] = "F64"; });
                   },
                   st, kVictim, "unsupported dtype 'F64'"});
  cases.push_back({"dtype_int8", 1,
                   [=](const std::string& d) {
                     rewrite_single(d, {}, [](json& h) { h[kVictim]["dtype"] = "I8"; });
                   },
                   st, kVictim, "unsupported dtype 'I8'"});
  cases.push_back({"wrong_shape", 1,
                   [=](const std::string& d) {
                     rewrite_single(d, [](auto& entries) {
                       for (auto& e : entries) {
                         if (e.name == kVictim) e.shape = {16, 32};  // transposed
                       }
                     });
                   },
                   st, kVictim, "has shape [16, 32], expected [32, 16]"});
  cases.push_back({"missing_tensor", 1,
                   [=](const std::string& d) {
                     rewrite_single(d, [](auto& entries) {
                       std::erase_if(entries, [](const t::StEntry& e) { return e.name == kVictim; });
                     });
                   },
                   st, kVictim, "missing tensor"});
  cases.push_back({"unexpected_tensor", 1,
                   [=](const std::string& d) {
                     rewrite_single(d, [](auto& entries) {
                       entries.push_back(t::entry_from_values("model.layers.9.mlp.up_proj.weight", "BF16", {2}, {1.f, 2.f}));
                     });
                   },
                   st, "model.layers.9.mlp.up_proj.weight", "unexpected tensor"});
  cases.push_back({"untied_but_no_lm_head", 1,
                   [=](const std::string& d) { edit_config(d, [](json& j) { j["tie_word_embeddings"] = false; }); }, st,
                   "lm_head.weight", "missing tensor"});
  cases.push_back({"no_weights_file", 1, [=](const std::string& d) { std::filesystem::remove(path_in(d, st)); }, "",
                   "", "no model.safetensors or model.safetensors.index.json"});
  cases.push_back({"config_malformed_json", 1,
                   [=](const std::string& d) { t::write_file(path_in(d, "config.json"), "{\"hidden_size\": 16,"); },
                   "config.json", "", "(syntax): not valid JSON"});
  cases.push_back({"config_missing", 1, [=](const std::string& d) { std::filesystem::remove(path_in(d, "config.json")); },
                   "config.json", "", "cannot open"});
  cases.push_back({"config_unsupported_architecture", 1,
                   [=](const std::string& d) {
                     edit_config(d, [](json& j) {
                       j["architectures"] = {"MixtralForCausalLM"};
                       j.erase("model_type");
                     });
                   },
                   "config.json", "", "unsupported architecture 'MixtralForCausalLM'"});
  cases.push_back({"config_unsupported_dtype", 1,
                   [=](const std::string& d) { edit_config(d, [](json& j) { j["dtype"] = "int8"; }); }, "config.json", "",
                   "unsupported dtype 'int8'"});
  // Sharded checkpoints.
  const std::string index = "model.safetensors.index.json";
  cases.push_back({"index_malformed_json", 3, [=](const std::string& d) { t::write_file(path_in(d, index), "{\"weight_map\": "); },
                   index, "", "(syntax): not valid JSON"});
  cases.push_back({"index_without_weight_map", 3, [=](const std::string& d) { t::write_file(path_in(d, index), "{}"); },
                   index, "", "weight_map missing"});
  cases.push_back({"index_names_wrong_shard", 3,
                   [=](const std::string& d) {
                     json j = json::parse(t::read_file(path_in(d, index)));
                     const std::string mine = j["weight_map"][kVictim];
                     for (const char* other : {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors"}) {
                       if (other != mine) {
                         j["weight_map"][kVictim] = other;
                         break;
                       }
                     }
                     t::write_file(path_in(d, index), j.dump());
                   },
                   index, kVictim, "which does not hold it"});
  cases.push_back({"index_omits_a_tensor", 3,
                   [=](const std::string& d) {
                     json j = json::parse(t::read_file(path_in(d, index)));
                     j["weight_map"].erase(kVictim);
                     t::write_file(path_in(d, index), j.dump());
                   },
                   "", kVictim, "unexpected tensor"});
  cases.push_back({"shard_missing", 3,
                   [=](const std::string& d) { std::filesystem::remove(path_in(d, "model-00002-of-00003.safetensors")); },
                   "model-00002-of-00003.safetensors", "", "cannot be opened"});
  cases.push_back({"shard_truncated", 3,
                   [=](const std::string& d) { truncate_to(path_in(d, "model-00001-of-00003.safetensors"), -3); },
                   "model-00001-of-00003.safetensors", "", "file truncated"});
  cases.push_back({"shard_path_escapes", 3,
                   [=](const std::string& d) {
                     json j = json::parse(t::read_file(path_in(d, index)));
                     j["weight_map"][kVictim] = "../elsewhere.safetensors";
                     t::write_file(path_in(d, index), j.dump());
                   },
                   index, kVictim, "is not a file name in the directory"});
  return cases;
}

class CheckpointErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(CheckpointErrors, OneLineNamingFileAndTensor) {
  const BadCase& c = GetParam();
  t::TempDir dir;
  const ModelConfig config = t::small_qwen3_config();
  t::write_checkpoint(dir.path(), t::hf_config_json(config), t::checkpoint_entries(config, "BF16"), c.shards);
  ASSERT_TRUE(load_hf_checkpoint(dir.path()).ok()) << "the undamaged checkpoint must load";
  c.damage(dir.path());
  auto r = load_hf_checkpoint(dir.path());
  ASSERT_FALSE(r.ok());
  std::string msg(r.status().message());
  // Print without the temp directory, so that the log reads the same every run.
  std::string shown = msg;
  for (size_t p; (p = shown.find(dir.path())) != std::string::npos;) shown.replace(p, dir.path().size(), "<dir>");
  std::printf("  case %-32s shards=%d -> %s\n", c.name.c_str(), c.shards, shown.c_str());
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
  const std::string file = c.file.empty() ? dir.path() : path_in(dir.path(), c.file);
  EXPECT_NE(msg.find(file), std::string::npos) << "names the file: " << msg;
  if (!c.tensor.empty()) {
    EXPECT_NE(msg.find("'" + c.tensor + "'"), std::string::npos) << "names the tensor: " << msg;
  }
  EXPECT_NE(msg.find(c.phrase), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(DamagedCheckpoints, CheckpointErrors, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

}  // namespace
}  // namespace samebits
