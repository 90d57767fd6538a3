#include "harness/serve/server.h"

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "harness/golden/digest.h"
#include "harness/serve/openai_response.h"
#include "httplib.h"
#include "kernels/backend.h"

namespace samebits::serve {
namespace {

using nlohmann::json;

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 429) res.set_header("Retry-After", "1");
  res.set_content(dump(error_json(e)), "application/json");
}

// The model spec as clients may see it: a checkpoint directory by its last component only, so
// the card does not tell every client where the operator keeps files.
std::string public_model_spec(const std::string& spec) {
  if (spec == "builtin" || spec.rfind("synthetic:", 0) == 0) return spec;
  std::filesystem::path p = std::filesystem::path(spec).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

struct Context {
  EngineService* service = nullptr;
  RequestLimits limits;
  std::string name;
  json model_card;
};

// Streams a job as server-sent events: one chunk per choice whenever it has new tokens, a
// comment line every second of silence (which also notices a client that went away), a last
// chunk with usage, then `data: [DONE]`.
void stream_job(const Context& ctx, std::shared_ptr<Job> job, httplib::Response& res) {
  struct Progress {
    std::vector<size_t> sent;
    std::vector<bool> finished;
  };
  auto progress = std::make_shared<Progress>();
  progress->sent.assign(job->choices.size(), 0);
  progress->finished.assign(job->choices.size(), false);
  EngineService* service = ctx.service;
  const std::string name = ctx.name;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [job, progress, service, name](size_t, httplib::DataSink& sink) {
        std::string out;
        bool all_done = false;
        {
          std::unique_lock<std::mutex> lock(job->mu);
          auto has_news = [&] {
            for (size_t i = 0; i < job->choices.size(); ++i) {
              const ChoiceState& c = job->choices[i];
              if ((c.done && !progress->finished[i]) || visible_tokens(c, job->request.stop) > progress->sent[i]) return true;
            }
            return job->done;
          };
          job->cv.wait_for(lock, std::chrono::seconds(1), has_news);
          for (size_t i = 0; i < job->choices.size(); ++i) {
            const ChoiceState& c = job->choices[i];
            if (progress->finished[i]) continue;
            const size_t visible = visible_tokens(c, job->request.stop);
            const size_t to = c.done ? c.tokens.size() : visible;
            if (to <= progress->sent[i] && !c.done) continue;
            out += "data: " + dump(chunk_json(*job, name, int(i), progress->sent[i], visible, to,
                                              c.done ? finish_reason_text(c.reason) : nullptr)) + "\n\n";
            progress->sent[i] = to;
            progress->finished[i] = c.done;
          }
          all_done = job->done;
          if (all_done) {
            if (job->timed_out)
              out += "data: " + dump(error_json({504, "timeout", "the request ran past the server's time limit", "", "timeout"})) + "\n\n";
            else if (!job->error.empty())
              out += "data: " + dump(error_json({400, "invalid_request_error", job->error, "", ""})) + "\n\n";
            json usage = {{"id", job->id},
                          {"object", job->request.api == Api::kChat ? "chat.completion.chunk" : "text_completion"},
                          {"created", job->created}, {"model", name}, {"choices", json::array()},
                          {"usage", usage_json(*job)}};
            out += "data: " + dump(usage) + "\n\ndata: [DONE]\n\n";
          }
        }
        if (out.empty()) out = ": keep-alive\n\n";
        if (!sink.write(out.data(), out.size())) {
          service->cancel(job);
          return false;
        }
        if (all_done) sink.done();
        return true;
      },
      [job, service](bool success) {
        if (!success) service->cancel(job);
      });
}

void handle_generation(const Context& ctx, Api api, const httplib::Request& req, httplib::Response& res) {
  ParsedRequest parsed = parse_generation_request(api, req.body, ctx.limits);
  if (const ApiError* e = std::get_if<ApiError>(&parsed)) return send_error(res, *e);
  const GenerationRequest& request = std::get<GenerationRequest>(parsed);
  ApiError error;
  std::shared_ptr<Job> job = ctx.service->submit(request, &error);
  if (!job) return send_error(res, error);
  if (request.stream) return stream_job(ctx, job, res);
  std::unique_lock<std::mutex> lock(job->mu);
  job->cv.wait(lock, [&] { return job->done; });
  if (job->timed_out) return send_error(res, {504, "timeout", "the request ran past the server's time limit", "", "timeout"});
  if (!job->error.empty()) {
    const bool engine_fault = job->error.rfind("engine error", 0) == 0;
    return send_error(res, {engine_fault ? 500 : 400, engine_fault ? "server_error" : "invalid_request_error", job->error, "", ""});
  }
  res.set_content(dump(response_json(*job, ctx.name)), "application/json");
}

// Blocks SIGINT and SIGTERM in this thread and every thread started after it; one thread then
// waits for them with sigwait.
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace

std::string served_name(const ServeOptions& o) {
  if (!o.served_model_name.empty()) return o.served_model_name;
  if (o.model == kBuiltinModelSpec) return "samebits-builtin";
  std::string name = o.model;
  for (char& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '-';
  return name;
}

int run_serve(const ServeOptions& o) {
  const sigset_t stop_signals = block_stop_signals();
  auto fail = [](const std::string& message) {
    std::fprintf(stderr, "samebits: error: %s\n", message.c_str());
    return 2;
  };
  std::string why;
  const Backend* backend = find_backend(o.backend, &why);
  if (!backend) return fail(absl::StrCat("--backend ", o.backend, ": ", why));
  auto model = resolve_model(o.model);
  if (!model.ok()) return fail(std::string(model.status().message()));
  EngineConfig config = o.engine;
  config.exec.mode = o.mode;
  config.exec.num_threads = o.threads;
  auto service = EngineService::start(*model, *backend, config, o.limits);
  if (!service.ok()) return fail(std::string(service.status().message()));

  Context ctx;
  ctx.service = service->get();
  ctx.name = served_name(o);
  ctx.limits.model_names = {ctx.name};
  ctx.limits.vocab_size = model->config.vocab_size;
  ctx.limits.bos_id = model->config.bos_token_id;
  ctx.limits.max_model_len = config.num_blocks * config.block_size;
  if (model->config.max_position_embeddings > 0)
    ctx.limits.max_model_len = std::min(ctx.limits.max_model_len, model->config.max_position_embeddings);
  ctx.limits.max_n = o.max_n;
  ctx.limits.max_top_logprobs = ctx.service->max_top_logprobs();
  ctx.model_card = {{"id", ctx.name},
                    {"object", "model"},
                    {"created", 0},
                    {"owned_by", "samebits"},
                    {"max_model_len", ctx.limits.max_model_len},
                    {"samebits",
                     {{"model", public_model_spec(o.model)},
                      {"description", absl::StrReplaceAll(model->description, {{o.model, public_model_spec(o.model)}})},
                      {"weights_digest", digest_hex(model->weights_digest)},
                      {"backend_id", backend->id},
                      {"mode", std::string(mode_name(o.mode))},
                      {"kernel_set_version", kKernelSetVersion}}}};

  httplib::Server server;
  const int http_threads = std::max(1, o.http_threads);
  server.new_task_queue = [http_threads] { return new httplib::ThreadPool(size_t(http_threads)); };
  server.set_payload_max_length(o.max_body_bytes);
  server.set_keep_alive_max_count(100000);
  server.set_error_handler([&](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ApiError e{res.status, "invalid_request_error", "", "", ""};
    if (res.status == 404) e.message = absl::StrCat("no route ", req.method, " ", req.path), e.code = "not_found";
    else if (res.status == 413)
      e.message = absl::StrCat("the request body exceeds ", o.max_body_bytes, " bytes"), e.code = "request_too_large";
    else e.message = absl::StrCat("HTTP ", res.status), e.type = res.status >= 500 ? "server_error" : e.type;
    send_error(res, e);
  });
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(res, {500, "server_error", "internal error", "", ""});
  });
  server.Get("/health", [&](const httplib::Request&, httplib::Response& res) {
    const Health h = ctx.service->health();
    res.set_content(dump({{"status", "ok"},
                          {"kv_blocks_total", h.kv_blocks_total},
                          {"kv_blocks_free", h.kv_blocks_free},
                          {"running", h.running},
                          {"waiting", h.waiting},
                          {"in_flight", h.in_flight},
                          {"requests_finished", h.jobs_finished},
                          {"requests_cancelled", h.jobs_cancelled},
                          {"requests_timed_out", h.jobs_timed_out},
                          {"engine_steps", h.engine_steps},
                          {"tokens_generated", h.tokens_generated}}),
                    "application/json");
  });
  server.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(dump({{"object", "list"}, {"data", json::array({ctx.model_card})}}), "application/json");
  });
  server.Post("/v1/completions", [&](const httplib::Request& req, httplib::Response& res) {
    handle_generation(ctx, Api::kCompletions, req, res);
  });
  server.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    handle_generation(ctx, Api::kChat, req, res);
  });

  // cpp-httplib listens with a backlog of 5 (fixed when Debian built it): a burst of connections
  // overflows it and the kernel drops their handshakes. Keep the listening socket and listen again
  // with the system's maximum (Linux lets listen() raise the backlog of a listening socket).
  int listen_socket = -1;
  server.set_socket_options([&listen_socket](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_socket = sock;
  });
  server.set_read_timeout(60);
  server.set_keep_alive_timeout(60);
  int port = o.port;
  if (port == 0) {
    port = server.bind_to_any_port(o.host);
    if (port < 0) return fail(absl::StrCat("--host ", o.host, ": cannot bind any port"));
  } else if (!server.bind_to_port(o.host, port)) {
    return fail(absl::StrCat("--host ", o.host, " --port ", port, ": cannot bind (in use, or not an address of this machine)"));
  }
  if (listen_socket >= 0) ::listen(listen_socket, SOMAXCONN);
  std::printf("samebits serve: listening on http://%s:%d/v1 (model %s, backend %s, %s mode)\n", o.host.c_str(), port,
              ctx.name.c_str(), backend->id.c_str(), std::string(mode_name(o.mode)).c_str());
  std::fflush(stdout);

  std::thread signals([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    server.stop();
  });
  server.listen_after_bind();
  if (server.is_running() || signals.joinable()) pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  (*service)->stop();
  const Health h = ctx.service->health();
  std::printf("samebits serve: stopped after %lld requests (%lld cancelled, %lld timed out)\n",
              static_cast<long long>(h.jobs_finished), static_cast<long long>(h.jobs_cancelled),
              static_cast<long long>(h.jobs_timed_out));
  return 0;
}

}  // namespace samebits::serve
