#include "tests/model/reference_qwen.h"

#include <cmath>
#include <string>

namespace samebits::testing {
namespace {

using Matrix = std::vector<float>;  // row-major, values already bf16-representable

float rb(double v) { return round_bf16(float(v)); }

std::vector<float> tensor(const HostWeights& w, const std::string& name) {
  const HostTensor& t = w.tensors.at(name);
  std::vector<float> out(t.data.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = to_float(t.data[i]);
  return out;
}

// y[T,N] = bf16(x[T,K] w[N,K]^T + bias)
Matrix linear(const Matrix& x, const std::vector<float>& w, const std::vector<float>* bias, int64_t T, int64_t N,
              int64_t K) {
  Matrix y(size_t(T * N));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += double(x[size_t(t * K + k)]) * double(w[size_t(n * K + k)]);
      if (bias) acc = double(float(acc)) + double((*bias)[size_t(n)]);
      y[size_t(t * N + n)] = rb(acc);
    }
  }
  return y;
}

// In place over rows of `dim`: bf16(bf16(x * rsqrt(mean(x^2) + eps)) * w)
void rmsnorm(Matrix& x, const std::vector<float>& w, int64_t dim, float eps) {
  for (size_t r = 0; r < x.size() / size_t(dim); ++r) {
    float* row = &x[r * size_t(dim)];
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(row[i]) * double(row[i]);
    const double inv = 1.0 / std::sqrt(ss / double(dim) + double(eps));
    for (int64_t i = 0; i < dim; ++i) row[i] = rb(double(rb(double(row[i]) * inv)) * double(w[size_t(i)]));
  }
}

void rope(Matrix& x, int64_t T, int heads, int hd, double theta) {
  const int half = hd / 2;
  for (int64_t t = 0; t < T; ++t) {
    for (int h = 0; h < heads; ++h) {
      float* v = &x[size_t((t * heads + h) * hd)];
      for (int i = 0; i < half; ++i) {
        const double angle = double(t) * std::pow(theta, -2.0 * i / hd);
        const double c = double(float(std::cos(angle))), s = double(float(std::sin(angle)));
        const double a = v[i], b = v[i + half];
        v[i] = rb(a * c - b * s);
        v[i + half] = rb(b * c + a * s);
      }
    }
  }
}

}  // namespace

std::vector<float> reference_logits(const ModelConfig& c, const HostWeights& w, const std::vector<int32_t>& tokens) {
  const int64_t T = int64_t(tokens.size()), H = c.hidden_size, I = c.intermediate_size, hd = c.head_dim;
  const int64_t q_dim = int64_t(c.num_heads) * hd, kv_dim = int64_t(c.num_kv_heads) * hd;
  const std::vector<float> embed = tensor(w, "model.embed_tokens.weight");
  Matrix resid(size_t(T * H));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < H; ++i) resid[size_t(t * H + i)] = embed[size_t(tokens[size_t(t)] * H + i)];
  }
  for (int l = 0; l < c.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    Matrix h = resid;
    rmsnorm(h, tensor(w, p + "input_layernorm.weight"), H, c.rms_norm_eps);
    std::vector<float> qb, kb, vb;
    if (c.attention_bias) {
      qb = tensor(w, p + "self_attn.q_proj.bias");
      kb = tensor(w, p + "self_attn.k_proj.bias");
      vb = tensor(w, p + "self_attn.v_proj.bias");
    }
    Matrix q = linear(h, tensor(w, p + "self_attn.q_proj.weight"), c.attention_bias ? &qb : nullptr, T, q_dim, H);
    Matrix k = linear(h, tensor(w, p + "self_attn.k_proj.weight"), c.attention_bias ? &kb : nullptr, T, kv_dim, H);
    Matrix v = linear(h, tensor(w, p + "self_attn.v_proj.weight"), c.attention_bias ? &vb : nullptr, T, kv_dim, H);
    if (c.qk_norm) {
      rmsnorm(q, tensor(w, p + "self_attn.q_norm.weight"), hd, c.rms_norm_eps);
      rmsnorm(k, tensor(w, p + "self_attn.k_norm.weight"), hd, c.rms_norm_eps);
    }
    rope(q, T, c.num_heads, int(hd), c.rope_theta);
    rope(k, T, c.num_kv_heads, int(hd), c.rope_theta);
    Matrix attn(size_t(T * q_dim));
    const int group = c.num_heads / c.num_kv_heads;
    const double scale = 1.0 / std::sqrt(double(hd));
    for (int64_t t = 0; t < T; ++t) {
      for (int hq = 0; hq < c.num_heads; ++hq) {
        const int hk = hq / group;
        std::vector<double> score(size_t(t + 1));
        double mx = -1e300;
        for (int64_t j = 0; j <= t; ++j) {
          double dot = 0;
          for (int64_t i = 0; i < hd; ++i) dot += double(q[size_t((t * c.num_heads + hq) * hd + i)]) * k[size_t((j * c.num_kv_heads + hk) * hd + i)];
          score[size_t(j)] = dot * scale;
          mx = std::max(mx, score[size_t(j)]);
        }
        double den = 0;
        for (double& s : score) den += (s = std::exp(s - mx));
        for (int64_t i = 0; i < hd; ++i) {
          double acc = 0;
          for (int64_t j = 0; j <= t; ++j) acc += score[size_t(j)] * v[size_t((j * c.num_kv_heads + hk) * hd + i)];
          attn[size_t((t * c.num_heads + hq) * hd + i)] = rb(acc / den);
        }
      }
    }
    Matrix o = linear(attn, tensor(w, p + "self_attn.o_proj.weight"), nullptr, T, H, q_dim);
    for (size_t i = 0; i < resid.size(); ++i) resid[i] = rb(double(resid[i]) + o[i]);
    h = resid;
    rmsnorm(h, tensor(w, p + "post_attention_layernorm.weight"), H, c.rms_norm_eps);
    Matrix gate = linear(h, tensor(w, p + "mlp.gate_proj.weight"), nullptr, T, I, H);
    Matrix up = linear(h, tensor(w, p + "mlp.up_proj.weight"), nullptr, T, I, H);
    for (size_t i = 0; i < gate.size(); ++i) {
      const double g = gate[i];
      gate[i] = rb(double(rb(g / (1.0 + std::exp(-g)))) * up[i]);
    }
    Matrix down = linear(gate, tensor(w, p + "mlp.down_proj.weight"), nullptr, T, H, I);
    for (size_t i = 0; i < resid.size(); ++i) resid[i] = rb(double(resid[i]) + down[i]);
  }
  rmsnorm(resid, tensor(w, "model.norm.weight"), H, c.rms_norm_eps);
  const std::vector<float> head = c.tie_word_embeddings ? embed : tensor(w, "lm_head.weight");
  std::vector<float> logits(size_t(T * c.vocab_size));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < c.vocab_size; ++n) {
      double acc = 0;
      for (int64_t i = 0; i < H; ++i) acc += double(resid[size_t(t * H + i)]) * head[size_t(n * H + i)];
      logits[size_t(t * c.vocab_size + n)] = float(acc);
    }
  }
  return logits;
}

}  // namespace samebits::testing
