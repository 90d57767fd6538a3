// `samebits`: replays a scenario (the Feynman experiment) in both kernel modes, compares digests
// with the goldens, and reports. See `samebits --help`.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "CLI/CLI.hpp"
#include "harness/cli/commands.h"
#include "harness/serve/server.h"

namespace samebits::cli {
namespace {

void add_run_options(CLI::App* cmd, RunArgs* a, bool full) {
  cmd->add_option("SCENARIO", a->scenario, "Scenario file (YAML)")->required();
  cmd->add_option("--backend", a->options.backend, "Backend (default: the scenario's)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--mode", a->mode, "Modes to run (default: the scenario's)")
      ->check(CLI::IsMember({"default", "invariant", "both"}));
  cmd->add_option("--samples", a->options.samples, "Target samples (default: the scenario's)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--model", a->options.model, "Model spec: builtin | synthetic:<config>[:seed] | checkpoint dir");
  cmd->add_option("--threads", a->options.threads, "CPU backend threads (default: all)")->check(CLI::Range(1, 1024));
  cmd->add_option("--golden-dir", a->golden_dir, "Golden folder (default: golden/ beside scenarios/)");
  cmd->add_option("--json", a->json, "Write the results as JSON to this file");
  cmd->add_option("--markdown", a->markdown, "Write a Markdown summary to this file");
  cmd->add_option("--junit", a->junit, "Write JUnit XML to this file");
  cmd->add_option("--target-url", a->options.target_url,
                  "Client mode: send the workload to this OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1)");
  cmd->add_option("--target-model", a->options.target_model, "Client mode: the model name to ask the server for");
  cmd->add_flag("--in-process", a->options.in_process, "Ignore the scenario's target: run the built-in engine");
  cmd->add_option("--html", a->html, "Write a self-contained HTML report to this file");
  if (full) {
    cmd->add_option("--trace", a->trace, "Write the schedule actually used to this trace file (for replay)");
    cmd->add_flag("--live", a->options.live, "Live mode: client threads submit with real timing");
    cmd->add_option("--clients", a->options.clients, "Live client threads (default: the scenario's)")
        ->check(CLI::Range(1, 256));
    cmd->add_flag("--explain", a->explain, "After the run, find the first op whose bits differ for every fork (see explain)");
    cmd->add_option("--max-forks", a->max_forks, "Forks explained per mode (default 8)")->check(CLI::Range(1, 1000));
  }
  cmd->add_flag("--profile", a->options.profile,
                 "Time every op on the backend's clock (CUDA events on a GPU) and report where the time went");
  cmd->add_flag_function("--no-graphs", [a](int64_t) { a->options.graphs = false; },
                         "Run decode steps op by op instead of replaying recorded CUDA graphs");
  cmd->add_flag_function("--no-schedule-ahead", [a](int64_t) { a->options.schedule_ahead = false; },
                         "Schedule each step after the previous step's tokens are read, instead of while it computes");
  cmd->add_flag_function("--no-progress", [a](int64_t) { a->progress = false; }, "No progress line on stderr");
}

void add_serve_options(CLI::App* cmd, serve::ServeOptions* o, std::string* mode) {
  cmd->add_option("--model", o->model, "Model spec: builtin | synthetic:<config>[:seed] | checkpoint dir");
  cmd->add_option("--backend", o->backend, "Backend")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--mode", *mode, "Kernel mode")->check(CLI::IsMember({"default", "invariant"}));
  cmd->add_option("--host", o->host, "Address to listen on (loopback unless told otherwise)");
  cmd->add_option("--port", o->port, "Port (0 = any free port; the chosen one is printed)")->check(CLI::Range(0, 65535));
  cmd->add_option("--served-model-name", o->served_model_name, "Model name clients give (default: samebits-builtin / from --model)");
  cmd->add_option("--threads", o->threads, "CPU backend threads (default: all)")->check(CLI::Range(1, 1024));
  cmd->add_option("--kv-blocks", o->engine.num_blocks, "KV cache blocks")->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--block-size", o->engine.block_size, "KV block size (tokens)")->check(CLI::Range(1, 4096));
  cmd->add_option("--max-seqs", o->engine.max_seqs, "Running sequences at most")->check(CLI::Range(1, 65536));
  cmd->add_option("--max-tokens-per-step", o->engine.max_tokens_per_step, "Token budget of one engine step")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-chunk", o->engine.max_chunk, "Prefill chunk cap (0 = none)")->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--parallel-units", o->engine.exec.parallel_units, "Units default-mode planners size splits for")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--max-queue", o->limits.max_queued_sequences, "Sequences queued or running at most (more: HTTP 429)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-body-bytes", o->max_body_bytes, "Largest request body (more: HTTP 413)")->check(CLI::Range(64, 1 << 30));
  cmd->add_option("--max-n", o->max_n, "Largest n per request")->check(CLI::Range(1, 1024));
  cmd->add_option("--http-threads", o->http_threads, "Connections served at once")->check(CLI::Range(1, 4096));
  cmd->add_option_function<int>("--request-timeout", [o](int s) { o->limits.request_timeout = std::chrono::seconds(s); },
                                "Seconds one request may take (default 600)")
      ->check(CLI::Range(1, 86400));
}

int main_impl(int argc, char** argv) {
  CLI::App app{"samebits: bit-for-bit reproducibility harness and golden-output regression suite for LLM inference.\n"
               "Exit codes: 0 pass, 1 divergence in invariant mode or golden mismatch, 2 usage or input error."};
  app.require_subcommand(1);
  RunArgs run_args, check_args, update_args;

  CLI::App* run = app.add_subcommand("run", "Run a scenario in its modes, check goldens, print the comparison table");
  add_run_options(run, &run_args, true);

  CLI::App* golden = app.add_subcommand("golden", "Check or update golden digests");
  golden->require_subcommand(1);
  CLI::App* check = golden->add_subcommand("check", "Run the scenario and compare with its golden (exit 2 if none or not comparable)");
  add_run_options(check, &check_args, false);
  CLI::App* update = golden->add_subcommand("update", "Run the scenario and write golden/<scenario>/<backend>.json atomically");
  add_run_options(update, &update_args, false);

  std::string compare_a, compare_b;
  CLI::App* compare = app.add_subcommand("compare", "First divergence between two result files (from run --json)");
  compare->add_option("A", compare_a, "First results JSON")->required();
  compare->add_option("B", compare_b, "Second results JSON")->required();

  std::string trace, replay_json;
  CLI::App* replay = app.add_subcommand("replay", "Re-run a trace's recorded schedule and check it gives the same digests");
  replay->add_option("TRACE", trace, "Trace file (from run --trace)")->required();
  replay->add_option("--json", replay_json, "Write the replay's results as JSON to this file");

  ExplainArgs explain_args;
  CLI::App* explain = app.add_subcommand(
      "explain", "Why did it fork? Replays the schedules of the main and each diverging sample with per-op digests and "
                 "names the first (token, layer, op) whose bits differ, the size of the difference, its growth to the "
                 "logits, the top-2 logit gap at the fork and the plan decisions that differed");
  explain->add_option("RESULTS", explain_args.results, "Results JSON (from run --json)")->required();
  explain->add_option("--trace", explain_args.trace, "The run's trace (from run --trace; needed for live runs; "
                                                     "without it the scenario is run again)");
  explain->add_option("--html", explain_args.html, "Write a self-contained HTML report to this file");
  explain->add_option("--markdown", explain_args.markdown, "Write a Markdown summary to this file");
  explain->add_option("--threads", explain_args.threads, "CPU backend threads (default: all)")->check(CLI::Range(1, 1024));
  explain->add_option("--max-forks", explain_args.max_forks, "Forks explained per mode (default 8)")->check(CLI::Range(1, 1000));

  CLI::App* info = app.add_subcommand("info", "Backends, devices, models and versions");

  serve::ServeOptions serve_options;
  std::string serve_mode = "invariant";
  CLI::App* serve_cmd = app.add_subcommand("serve", "Serve the built-in engine over an OpenAI-compatible HTTP API");
  add_serve_options(serve_cmd, &serve_options, &serve_mode);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitPass : kExitInputError;
  }
  if (run->parsed()) return run_command(run_args);
  if (check->parsed()) return golden_check_command(check_args);
  if (update->parsed()) return golden_update_command(update_args);
  if (compare->parsed()) return compare_command(compare_a, compare_b);
  if (replay->parsed()) return replay_command(trace, replay_json);
  if (explain->parsed()) return explain_command(explain_args);
  if (info->parsed()) return info_command();
  if (serve_cmd->parsed()) {
    serve_options.mode = *parse_mode(serve_mode);
    return serve::run_serve(serve_options);
  }
  return input_error("no command given (see --help)");
}

}  // namespace
}  // namespace samebits::cli

// OpenMP's worker threads wait for the next parallel region by spinning (libgomp: 300000 rounds
// unless told otherwise). Where the cores are shared with other work, the spinning threads take
// the time the working ones need: the Feynman experiment (200 samples) on two cores shared with
// compilers took over 600 s instead of 126 s with passive waits. libgomp reads its policy from
// the environment once, when it is loaded, before main: so the command runs itself again, once,
// with OMP_WAIT_POLICY=passive (same process, same arguments), unless the user chose a policy
// (OMP_WAIT_POLICY or GOMP_SPINCOUNT given: kept). Where it cannot (no /proc), it runs on as it is.
void wait_passively_between_parallel_regions(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (::setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  ::unsetenv("OMP_WAIT_POLICY");
}

int main(int argc, char** argv) {
  wait_passively_between_parallel_regions(argv);
  return samebits::cli::main_impl(argc, argv);
}
