#include "tests/golden/synthetic_results.h"

#include <vector>

#include "harness/golden/digest.h"
#include "models/tiny_qwen/tokenizer.h"

namespace samebits::testing {

TargetObservation synthetic_observation(int sample, int length, int fork_at, int logit_fork_at) {
  TargetObservation o;
  o.sample = sample;
  o.finish = "max_tokens";
  const std::string text = "Richard Feynman was an American theoretical physicist, born in Queens, New York.";
  for (int i = 0; i < length; ++i) {
    int32_t token = static_cast<unsigned char>(text[size_t(i) % text.size()]);
    if (fork_at >= 0 && i >= fork_at) token = 'A' + (i % 26);
    std::vector<float> logits(8, 0.25f * float(i));
    logits[size_t(i % 8)] = 1.0f;
    if (logit_fork_at >= 0 && i >= logit_fork_at) logits[0] += 1e-6f;  // same token, other bits
    o.tokens.push_back(token);
    const uint64_t d = step_digest(token, logits);
    o.steps.push_back(d);
    o.digest = chain_digest(o.digest, d);
  }
  return o;
}

RunResults synthetic_results(int samples, const std::map<int, int>& forks, Mode mode) {
  std::vector<TargetObservation> obs;
  for (int s = 0; s < samples; ++s) {
    auto it = forks.find(s);
    obs.push_back(synthetic_observation(s, 24, it == forks.end() ? -1 : it->second,
                                        it == forks.end() ? -1 : it->second));
  }
  RunResults r;
  RunIdentity& id = r.identity;
  id.scenario = {"synthetic", "scenarios/synthetic.yaml", 0x1111222233334444ull, 0x9999aaaabbbbccccull};
  id.model = {"builtin", "synthetic streams", 0x5555666677778888ull};
  id.backend.name = "cuda";
  id.backend.id = "cuda-sm90";
  id.backend.description = "test";
  id.backend.device = {"NVIDIA H200", 132, "13.0", "13.1.0"};
  id.backend.kernel_set_version = 1;
  id.samples = samples;
  RunFigures f;
  f.wall_seconds = 2.0;
  f.tokens_generated = 24 * samples;
  f.engine_steps = 40;
  f.setup_weights_seconds = 0.25, f.setup_kv_cache_seconds = 0.125;
  f.step_seconds = 1.5, f.host_wait_seconds = 0.5, f.host_waits = 120;
  f.op_times = {{"attention decode", 160, 0.75, 0.0625}, {"linear q_proj 256x256", 160, 0.5, 0.03125}};
  f.host_rss_baseline_bytes = 300000000, f.host_peak_rss_bytes = 500000000;
  r.modes.push_back(analyze_mode(mode, obs, f, ByteTokenizer{}));
  return r;
}

}  // namespace samebits::testing
