// HF checkpoint loader: config.json parsing (Qwen3 / Qwen2, transformers 4 and 5 spellings),
// safetensors single and sharded, BF16/F16/F32 conversion to bf16, resolve_model specs, and the
// shipped checkpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "models/tiny_qwen/checkpoint.h"
#include "models/tiny_qwen/hf_config.h"
#include "models/tiny_qwen/model_source.h"
#include "models/tiny_qwen/safetensors.h"
#include "tests/model/hf_checkpoint_writer.h"

namespace samebits {
namespace {

using testing::TempDir;

uint16_t bits(bf16 v) { return v.bits; }

TEST(HfConfig, ParsesTransformers5Qwen3) {
  const ModelConfig want = testing::small_qwen3_config();
  auto hf = parse_hf_config(testing::hf_config_json(want).dump(), "config.json");
  ASSERT_TRUE(hf.ok()) << hf.status();
  const ModelConfig& c = hf->model;
  EXPECT_EQ(hf->architecture, "Qwen3ForCausalLM");
  EXPECT_EQ(hf->torch_dtype, "bfloat16");
  EXPECT_EQ(c.vocab_size, 24);
  EXPECT_EQ(c.hidden_size, 16);
  EXPECT_EQ(c.intermediate_size, 32);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.rms_norm_eps, 1e-6f);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(c.max_position_embeddings, 128);
  EXPECT_EQ(c.bos_token_id, 22);
  EXPECT_EQ(c.eos_token_id, 23);
}

TEST(HfConfig, ParsesTransformers4Spelling) {
  auto j = testing::hf_config_json(testing::small_qwen3_config());
  j.erase("rope_parameters");
  j.erase("dtype");
  j["rope_theta"] = 1000000.0;
  j["torch_dtype"] = "float32";
  j["eos_token_id"] = {23, 22};  // a list: the first is the model's EOS
  auto hf = parse_hf_config(j.dump(), "config.json");
  ASSERT_TRUE(hf.ok()) << hf.status();
  EXPECT_EQ(hf->model.rope_theta, 1e6);
  EXPECT_EQ(hf->torch_dtype, "float32");
  EXPECT_EQ(hf->model.eos_token_id, 23);
}

TEST(HfConfig, Qwen2HasBiasesNoQkNormAndDerivedHeadDim) {
  auto j = testing::hf_config_json(testing::small_qwen3_config());
  j["architectures"] = {"Qwen2ForCausalLM"};
  j["model_type"] = "qwen2";
  j.erase("head_dim");
  auto hf = parse_hf_config(j.dump(), "config.json");
  ASSERT_TRUE(hf.ok()) << hf.status();
  EXPECT_EQ(hf->model.head_dim, 16 / 4);
  EXPECT_TRUE(hf->model.attention_bias);
  EXPECT_FALSE(hf->model.qk_norm);
}

TEST(HfConfig, RefusesWhatTheForwardCannotHonour) {
  struct Case {
    const char* name;
    std::function<void(nlohmann::json&)> edit;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"llama", [](auto& j) { j["architectures"] = {"LlamaForCausalLM"}; }, "unsupported architecture 'LlamaForCausalLM'"},
      {"moe_type", [](auto& j) { j.erase("architectures"); j["model_type"] = "qwen3_moe"; }, "unsupported model_type 'qwen3_moe'"},
      {"arch_type_disagree", [](auto& j) { j["model_type"] = "qwen2"; }, "model_type is 'qwen2'"},
      {"no_arch", [](auto& j) { j.erase("architectures"); j.erase("model_type"); }, "neither architectures nor model_type"},
      {"missing_layers", [](auto& j) { j.erase("num_hidden_layers"); }, "num_hidden_layers: missing"},
      {"string_hidden", [](auto& j) { j["hidden_size"] = "16"; }, "hidden_size: \"16\" is not a positive integer"},
      {"zero_heads", [](auto& j) { j["num_attention_heads"] = 0; }, "num_attention_heads: 0"},
      {"dtype_f64", [](auto& j) { j["dtype"] = "float64"; }, "unsupported dtype 'float64'"},
      {"sliding", [](auto& j) { j["use_sliding_window"] = true; }, "use_sliding_window"},
      {"yarn", [](auto& j) { j["rope_parameters"]["rope_type"] = "yarn"; }, "only the default rope"},
      {"gelu", [](auto& j) { j["hidden_act"] = "gelu"; }, "hidden_act"},
      {"theta_disagree", [](auto& j) { j["rope_theta"] = 5.0; }, "disagrees with rope_parameters.rope_theta"},
      {"eos_outside_vocab", [](auto& j) { j["eos_token_id"] = 24; }, "outside the vocabulary"},
      {"kv_heads_not_dividing", [](auto& j) { j["num_key_value_heads"] = 3; }, "config.json"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto j = testing::hf_config_json(testing::small_qwen3_config());
    c.edit(j);
    auto hf = parse_hf_config(j.dump(), "ckpt/config.json");
    ASSERT_FALSE(hf.ok());
    const std::string msg(hf.status().message());
    std::printf("  case %-22s -> %s\n", c.name, msg.c_str());
    EXPECT_NE(msg.find("ckpt/config.json: "), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

// Loads a checkpoint written in each dtype and layout; values must equal to_bf16(written value).
TEST(Checkpoint, LoadsEveryDtypeSingleAndSharded) {
  const ModelConfig config = testing::small_qwen3_config();
  uint64_t reference_digest = 0;
  for (const char* dtype : {"BF16", "F16", "F32"}) {
    for (int shards : {1, 3}) {
      SCOPED_TRACE(std::string(dtype) + " shards=" + std::to_string(shards));
      std::printf("  case dtype=%s shards=%d\n", dtype, shards);
      TempDir dir;
      testing::write_checkpoint(dir.path(), testing::hf_config_json(config), testing::checkpoint_entries(config, dtype),
                                shards);
      auto ckpt = load_hf_checkpoint(dir.path());
      ASSERT_TRUE(ckpt.ok()) << ckpt.status();
      EXPECT_EQ(ckpt->num_files, shards);
      const auto expected = expected_tensor_shapes(config);
      ASSERT_EQ(ckpt->weights.tensors.size(), expected.size());
      for (const auto& [name, shape] : expected) {
        const HostTensor& t = ckpt->weights.tensors.at(name);
        ASSERT_EQ(t.shape, shape) << name;
        for (size_t i = 0; i < t.data.size(); ++i) {
          ASSERT_EQ(bits(t.data[i]), bits(to_bf16(testing::test_weight_value(name, int64_t(i))))) << name << "[" << i << "]";
        }
      }
      // The values are exact in every dtype, so every layout gives the same weights digest.
      const uint64_t digest = ckpt->weights.digest();
      if (reference_digest == 0) reference_digest = digest;
      EXPECT_EQ(digest, reference_digest);
    }
  }
}

// Conversion edge cases: f32 rounds to nearest even, f16 is widened exactly first.
TEST(Safetensors, ConvertsF32AndF16ToBf16) {
  struct Case {
    const char* what;
    std::string dtype;
    uint32_t raw;       // f32 bits or f16 bits
    uint16_t expected;  // bf16 bits
  };
  const std::vector<Case> cases = {
      {"f32 1+2^-8 ties to even (down)", "F32", 0x3f808000u, 0x3f80},
      {"f32 1+3*2^-8 ties to even (up)", "F32", 0x3f818000u, 0x3f82},
      {"f32 just above a tie rounds up", "F32", 0x3f808001u, 0x3f81},
      {"f32 -0", "F32", 0x80000000u, 0x8000},
      {"f32 inf", "F32", 0x7f800000u, 0x7f80},
      {"f32 nan stays nan", "F32", 0x7f800001u, 0x7fc0},
      {"f32 max rounds to inf", "F32", 0x7f7fffffu, 0x7f80},
      {"f16 1.0", "F16", 0x3c00u, 0x3f80},
      {"f16 1+2^-10 rounds to 1", "F16", 0x3c01u, 0x3f80},
      {"f16 1+2^-8+2^-10 rounds up", "F16", 0x3c05u, 0x3f81},
      {"f16 max 65504", "F16", 0x7bffu, 0x4780},
      {"f16 smallest subnormal 2^-24", "F16", 0x0001u, 0x3380},
      {"f16 largest subnormal", "F16", 0x03ffu, 0x3880},
      {"f16 -0", "F16", 0x8000u, 0x8000},
      {"f16 -inf", "F16", 0xfc00u, 0xff80},
      {"f16 -2.5", "F16", 0xc100u, 0xc020},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    TempDir dir;
    testing::StEntry e{"t", c.dtype, {1}, std::string(c.dtype == "F32" ? 4 : 2, '\0')};
    std::memcpy(e.bytes.data(), &c.raw, e.bytes.size());
    testing::write_file(dir.file("x.safetensors"), testing::safetensors_bytes({e}));
    auto f = SafetensorsFile::open(dir.file("x.safetensors"));
    ASSERT_TRUE(f.ok()) << f.status();
    auto t = (*f)->read_bf16("t");
    ASSERT_TRUE(t.ok()) << t.status();
    const uint16_t got = t->data[0].bits;
    const bool both_nan = (c.expected & 0x7fff) > 0x7f80 && (got & 0x7fff) > 0x7f80;
    std::printf("  case %-34s raw=0x%08x -> bf16 0x%04x (expected 0x%04x)\n", c.what, c.raw, got, c.expected);
    EXPECT_TRUE(got == c.expected || both_nan) << std::hex << got;
  }
}

TEST(Safetensors, ReadsMetadataAndUnalignedData) {
  TempDir dir;
  // One F16 tensor of 3 values first leaves the F32 tensor after it at an offset of 6 bytes.
  auto a = testing::entry_from_values("a", "F16", {3}, {1.f, -2.f, 0.5f});
  auto b = testing::entry_from_values("b", "F32", {2}, {3.f, -0.25f});
  testing::write_file(dir.file("x.safetensors"), testing::safetensors_bytes({a, b}));
  auto f = SafetensorsFile::open(dir.file("x.safetensors"));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  EXPECT_EQ((*f)->tensors().at("b").begin, 6u);
  auto t = (*f)->read_bf16("b");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(to_float(t->data[0]), 3.f);
  EXPECT_EQ(to_float(t->data[1]), -0.25f);
  EXPECT_FALSE((*f)->read_bf16("c").ok());
}

TEST(Checkpoint, TiedCheckpointMayCarryLmHead) {
  const ModelConfig config = testing::small_qwen3_config();
  TempDir dir;
  auto entries = testing::checkpoint_entries(config, "BF16");
  std::vector<float> head(size_t(config.vocab_size * config.hidden_size), 0.5f);
  entries.push_back(testing::entry_from_values("lm_head.weight", "BF16", {config.vocab_size, config.hidden_size}, head));
  testing::write_checkpoint(dir.path(), testing::hf_config_json(config), entries);
  auto ckpt = load_hf_checkpoint(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->weights.tensors.count("lm_head.weight"), 0u);  // tied: the embedding serves
}

TEST(Checkpoint, UntiedCheckpointKeepsLmHead) {
  ModelConfig config = testing::small_qwen3_config();
  config.tie_word_embeddings = false;
  TempDir dir;
  testing::write_checkpoint(dir.path(), testing::hf_config_json(config), testing::checkpoint_entries(config, "BF16"));
  auto ckpt = load_hf_checkpoint(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->weights.tensors.at("lm_head.weight").shape, (std::vector<int64_t>{24, 16}));
}

TEST(ModelSource, ResolvesSyntheticSpecs) {
  auto src = resolve_model("synthetic:tiny:7");
  ASSERT_TRUE(src.ok()) << src.status();
  auto tiny = builtin_config("tiny");
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(src->config.hidden_size, tiny->hidden_size);
  EXPECT_EQ(src->weights_digest, synthetic_weights_digest(*tiny, 7));
  auto seed0 = resolve_model("synthetic:tiny");
  ASSERT_TRUE(seed0.ok());
  EXPECT_EQ(seed0->weights_digest, synthetic_weights_digest(*tiny, 0));
  EXPECT_TRUE(src->weights.tensors.empty());  // generated where the model is built, never on the host here
  EXPECT_NE(seed0->weights_digest, src->weights_digest);
  for (const char* bad : {"synthetic:", "synthetic:nope", "synthetic:tiny:x", "synthetic:tiny:1:2", "/no/such/dir", ""}) {
    SCOPED_TRACE(bad);
    auto r = resolve_model(bad);
    ASSERT_FALSE(r.ok());
    std::printf("  spec '%s' -> %s\n", bad, std::string(r.status().message()).c_str());
    EXPECT_NE(r.status().message().find(std::string("model '") + bad + "'"), std::string::npos) << r.status();
  }
}

TEST(ModelSource, ResolvesACheckpointDirectory) {
  const ModelConfig config = testing::small_qwen3_config();
  TempDir dir;
  testing::write_checkpoint(dir.path(), testing::hf_config_json(config), testing::checkpoint_entries(config, "F32"), 2);
  auto src = resolve_model(dir.path());
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_EQ(src->config.num_layers, 2);
  // Mapped, not read: the digest streamed from the mapping is the one of the weights read whole.
  ASSERT_NE(src->checkpoint, nullptr);
  EXPECT_TRUE(src->weights.tensors.empty());
  auto loaded = load_hf_checkpoint(dir.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(src->weights_digest, loaded->weights.digest());
  EXPECT_NE(src->description.find("Qwen3ForCausalLM, 2 files"), std::string::npos) << src->description;
}

// A model built from the mapping equals the model built from the weights read whole, bit for bit,
// for every stored dtype (bf16 uploaded as stored, f16/f32 converted chunk by chunk); the inverse:
// one changed value changes both the digest and the logits.
TEST(ModelSource, MappedCheckpointBuildsTheSameModelAsHostWeights) {
  const ModelConfig config = testing::small_qwen3_config();
  ForwardBatch batch;
  batch.tokens = {1, 5, 9, 2};
  batch.positions = {0, 1, 2, 3};
  batch.slot_mapping = {0, 1, 2, 3};
  batch.query_start = {0, 4};
  batch.context_lens = {4};
  batch.block_tables = {0};
  batch.max_blocks_per_seq = 1;
  batch.logit_rows = {3};
  for (const char* dtype : {"BF16", "F16", "F32"}) {
    SCOPED_TRACE(dtype);
    TempDir dir;
    auto entries = testing::checkpoint_entries(config, dtype);
    testing::write_checkpoint(dir.path(), testing::hf_config_json(config), entries);
    auto src = resolve_model(dir.path());
    ASSERT_TRUE(src.ok()) << src.status();
    auto loaded = load_hf_checkpoint(dir.path());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    auto mapped = build_model(*src, cpu_backend(), {4, 16});
    ASSERT_TRUE(mapped.ok()) << mapped.status();
    auto whole = Model::create(cpu_backend(), loaded->config, loaded->weights, {4, 16});
    ASSERT_TRUE(whole.ok()) << whole.status();
    EXPECT_EQ((*mapped)->weights_digest(), loaded->weights.digest());
    EXPECT_EQ((*mapped)->setup_times().weights_bytes, 2 * [&] {
      uint64_t n = 0;
      for (const auto& [name, shape] : expected_tensor_shapes(config)) {
        uint64_t e = 1;
        for (int64_t d : shape) e *= uint64_t(d);
        n += e;
      }
      return n;
    }());
    std::vector<float> a, b;
    ExecContext ctx;
    ASSERT_TRUE((*mapped)->forward(ctx, batch, &a).ok());
    ASSERT_TRUE((*whole)->forward(ctx, batch, &b).ok());
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);

    // Inverse: another value in one tensor.
    TempDir other;
    entries = testing::checkpoint_entries(config, dtype);
    for (auto& e : entries) {
      // The first value's top byte (sign and exponent, or f16's high mantissa bits): kept by bf16.
      const size_t top = std::string(dtype) == "F32" ? 3 : 1;
      if (e.name == "model.layers.0.mlp.down_proj.weight") e.bytes[top] = char(e.bytes[top] ^ 0x01);
    }
    testing::write_checkpoint(other.path(), testing::hf_config_json(config), entries);
    auto changed = resolve_model(other.path());
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_NE(changed->weights_digest, src->weights_digest);
    auto changed_model = build_model(*changed, cpu_backend(), {4, 16});
    ASSERT_TRUE(changed_model.ok()) << changed_model.status();
    std::vector<float> c;
    ASSERT_TRUE((*changed_model)->forward(ctx, batch, &c).ok());
    EXPECT_NE(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0);
  }
}

// The shipped checkpoint: loads, has exactly the builtin "tiny" shape, and is bf16.
TEST(ModelSource, BuiltinCheckpointIsTheTinyShape) {
  auto src = resolve_model("builtin");
  ASSERT_TRUE(src.ok()) << src.status();
  auto tiny = builtin_config("tiny");
  ASSERT_TRUE(tiny.ok());
  const ModelConfig& c = src->config;
  EXPECT_EQ(c.vocab_size, tiny->vocab_size);
  EXPECT_EQ(c.hidden_size, tiny->hidden_size);
  EXPECT_EQ(c.intermediate_size, tiny->intermediate_size);
  EXPECT_EQ(c.num_layers, tiny->num_layers);
  EXPECT_EQ(c.num_heads, tiny->num_heads);
  EXPECT_EQ(c.num_kv_heads, tiny->num_kv_heads);
  EXPECT_EQ(c.head_dim, tiny->head_dim);
  EXPECT_EQ(c.rms_norm_eps, tiny->rms_norm_eps);
  EXPECT_EQ(c.rope_theta, tiny->rope_theta);
  EXPECT_EQ(c.tie_word_embeddings, tiny->tie_word_embeddings);
  EXPECT_EQ(c.qk_norm, tiny->qk_norm);
  EXPECT_EQ(c.attention_bias, tiny->attention_bias);
  EXPECT_EQ(c.max_position_embeddings, tiny->max_position_embeddings);
  EXPECT_EQ(c.bos_token_id, tiny->bos_token_id);
  EXPECT_EQ(c.eos_token_id, tiny->eos_token_id);
  ASSERT_NE(src->checkpoint, nullptr);
  for (const auto& [name, shape] : expected_tensor_shapes(*tiny)) {
    const StTensorInfo* info = src->checkpoint->info(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->shape, shape) << name;
  }
  auto loaded = load_hf_checkpoint(builtin_checkpoint_dir());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(src->weights_digest, loaded->weights.digest());
  // Trained, not seeded: differs from the synthetic weights of the same shape.
  EXPECT_NE(src->weights_digest, synthetic_weights(*tiny, 0).digest());
  std::printf("  builtin: %s, weights digest %016llx\n", src->description.c_str(),
              static_cast<unsigned long long>(src->weights_digest));
}

}  // namespace
}  // namespace samebits
