// Load: 2,000 requests over 64 concurrent keep-alive connections to one `samebits serve`. Every
// request is answered exactly once, with its own prompt's tokens; at the end the engine is idle
// and every KV block is free.
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "gtest/gtest.h"
#include "httplib.h"
#include "tests/serve/serve_process.h"

namespace samebits::testing {
namespace {

using nlohmann::json;

struct LoadCase {
  int requests = 2000;
  int connections = 64;
  int max_tokens = 2;  // small: the test is about the server, not the model
};

TEST(ServeLoad, TwoThousandRequestsOver64ConnectionsNoneLostNoneDuplicated) {
  const LoadCase load;
  ServeProcess server({"--mode", "invariant", "--max-queue", "256"});
  ASSERT_TRUE(server.ok()) << server.banner();
  std::vector<int> answers(size_t(load.requests), 0);
  std::vector<int> statuses(size_t(load.requests), -1);
  std::set<std::string> response_ids;
  std::map<std::string, int> transport_errors;
  std::mutex mu;
  std::atomic<int> next{0}, mismatched{0}, retried{0};
  auto worker = [&] {
    httplib::Client c("127.0.0.1", server.port());
    c.set_keep_alive(true);
    c.set_read_timeout(300);
    for (int i = next++; i < load.requests; i = next++) {
      const std::string prompt = "request " + std::to_string(i) + ":";
      const std::string body =
          json({{"model", "samebits-builtin"}, {"prompt", prompt}, {"max_tokens", load.max_tokens}, {"temperature", 0}}).dump();
      httplib::Result r = c.Post("/v1/completions", body, "application/json");
      while (r && r->status == 429) {  // queue full: the documented answer is to retry
        ++retried;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        r = c.Post("/v1/completions", body, "application/json");
      }
      if (!r) {
        std::lock_guard<std::mutex> lock(mu);
        ++transport_errors[httplib::to_string(r.error())];
        continue;
      }
      json j = json::parse(r->body, nullptr, false);
      std::lock_guard<std::mutex> lock(mu);
      statuses[size_t(i)] = r->status;
      if (r->status != 200 || j.is_discarded()) continue;
      ++answers[size_t(i)];
      response_ids.insert(j["id"].get<std::string>());
      // The answer is this request's: its prompt tokens are BOS + the prompt's bytes.
      std::vector<int32_t> expect{256};
      for (unsigned char ch : prompt) expect.push_back(ch);
      if (j["prompt_token_ids"].get<std::vector<int32_t>>() != expect ||
          j["usage"]["completion_tokens"] != j["choices"][0]["token_ids"].size())
        ++mismatched;
    }
  };
  std::vector<std::thread> threads;
  for (int c = 0; c < load.connections; ++c) threads.emplace_back(worker);
  for (auto& t : threads) t.join();

  int lost = 0, duplicated = 0, not_ok = 0;
  for (int i = 0; i < load.requests; ++i) {
    lost += answers[size_t(i)] == 0;
    duplicated += answers[size_t(i)] > 1;
    not_ok += statuses[size_t(i)] != 200;
  }
  std::string errors;
  for (const auto& [what, count] : transport_errors) errors += what + ": " + std::to_string(count) + "; ";
  EXPECT_EQ(lost, 0) << errors;
  EXPECT_EQ(duplicated, 0);
  EXPECT_EQ(not_ok, 0);
  EXPECT_EQ(mismatched, 0);
  EXPECT_EQ(response_ids.size(), size_t(load.requests));  // no response id given twice
  json h = http_get(server.port(), "/health").json();
  EXPECT_EQ(h["requests_finished"], load.requests);
  EXPECT_EQ(h["requests_cancelled"], 0);
  EXPECT_EQ(h["running"], 0);
  EXPECT_EQ(h["waiting"], 0);
  EXPECT_EQ(h["in_flight"], 0);
  EXPECT_EQ(h["kv_blocks_free"], h["kv_blocks_total"]) << h.dump();
  RecordProperty("retries_after_429", retried.load());
  RecordProperty("engine_steps", h["engine_steps"].get<int>());
  EXPECT_EQ(server.stop(), 0);
}

}  // namespace
}  // namespace samebits::testing
