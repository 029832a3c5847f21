#include "config/serve_spec.h"

#include <cmath>

#include "text/error.h"
#include "text/user_regex.h"

namespace sweepbench {

bool ServeSpec::has_sla() const {
  return std::isfinite(sla_ttft_s) || std::isfinite(sla_tpot_s) || std::isfinite(sla_e2e_s);
}

std::string ServeSpec::endpoint() const {
  return api == "chat" ? "/v1/chat/completions" : "/v1/completions";
}

namespace {

std::optional<std::string> optional_text(const Value& v) {
  if (v.is_null()) return std::nullopt;
  return v.as_string();
}

double seconds_of_ms(const Value& v) {
  return v.is_null() ? std::numeric_limits<double>::infinity() : v.as_float() / 1000;
}

}  // namespace

ServeSpec serve_spec_of(const Value& resolved) {
  ServeSpec s;
  if (config_at(resolved, "benchmark").as_string() != "serve") return s;
  auto at = [&](const char* key) -> const Value& { return config_at(resolved, key); };
  s.url = optional_text(at("serve.url"));
  if (s.url) {
    // A server someone else runs: the point only loads it.
    if (!at("serve.argv").items().empty()) {
      throw Error::input(at("serve.url").mark(), "serve.url",
                         "is set, and so is serve.argv: a point either starts its server or "
                         "loads one already running",
                         "leave serve.argv empty to load " + *s.url + ", or serve.url null");
    }
    const std::string& u = *s.url;
    if ((u.rfind("http://", 0) != 0 && u.rfind("https://", 0) != 0) ||
        u.find_first_of(" \t\r\n") != std::string::npos) {
      throw Error::input(at("serve.url").mark(), "serve.url", "'" + u + "' is no http(s) URL",
                         "write it as http://HOST:PORT");
    }
  } else {
    s.server = server_command_of(resolved);
  }

  const Value& ranks = at("launch.ranks");
  if (ranks.as_int() != 1) {
    throw Error::input(ranks.mark(), "launch.ranks",
                       "is " + std::to_string(ranks.as_int()) +
                           ", but a serve point is one server and one load client",
                       "leave launch.ranks at 1; the server's own options choose its devices "
                       "(e.g. vLLM's --tensor-parallel-size)");
  }
  s.host = at("serve.host").as_string();
  if (s.host.empty()) {
    throw Error::input(at("serve.host").mark(), "serve.host", "is empty",
                       "give the address the client reaches the server at, e.g. 127.0.0.1");
  }
  if (!at("serve.port").is_null()) s.port = at("serve.port").as_int();
  s.slurm_step = at("serve.slurm_step").as_string();
  if (!at("serve.node").is_null()) s.node = at("serve.node").as_int();
  if (const std::string runtime = at("container.runtime").as_string(); runtime != "none")
    s.container = runtime;
  if (s.container && s.node && s.slurm_step == "auto") {
    throw Error::input(at("serve.node").mark(), "serve.node",
                       "is " + std::to_string(*s.node) +
                           ", a node for the server's own SLURM step, but a point in a container "
                           "(container.runtime: " +
                           *s.container +
                           ") runs its server inside the image beside the client (srun is the "
                           "host's, not the image's)",
                       "leave serve.node null; or run the point without container.runtime and "
                       "start the server's image in serve.argv (e.g. [apptainer, exec, IMAGE, "
                       "vllm, serve, ...]), which then runs as a step on serve.node");
  }
  s.ready_path = optional_text(at("serve.ready.path"));
  s.ready_log = optional_text(at("serve.ready.log"));
  if (s.ready_path && (s.ready_path->empty() || s.ready_path->front() != '/')) {
    throw Error::input(at("serve.ready.path").mark(), "serve.ready.path",
                       "'" + *s.ready_path + "' is not a path",
                       "write it from its /, e.g. /health");
  }
  if (s.url && s.ready_log) {
    throw Error::input(at("serve.ready.log").mark(), "serve.ready.log",
                       "reads the output of a server the point starts; serve.url's is not "
                       "started here",
                       "check it by serve.ready.path (an HTTP path that answers 200), or set "
                       "serve.ready.path null to load it at once");
  }
  // serve.url's server is someone else's: with serve.ready.path null it is loaded at once.
  if (!s.url && !s.ready_path && !s.ready_log) {
    throw Error::input(at("serve.ready.path").mark(), "serve.ready.path",
                       "is null and serve.ready.log is not set: nothing would say the server is "
                       "ready",
                       "set serve.ready.path (an HTTP path that answers 200) or serve.ready.log "
                       "(a regular expression its output matches when ready)");
  }
  if (s.ready_log) UserRegex(*s.ready_log, at("serve.ready.log").mark(), "serve.ready.log");
  s.ready_timeout_s = at("serve.ready.timeout_s").as_float();
  s.stop_grace_s = at("serve.stop_grace_s").as_float();

  s.api = at("serve.api").as_string();
  s.model = optional_text(at("serve.model"));
  s.body = at("serve.body");
  for (const char* reserved : {"model", "prompt", "messages", "stream", "max_tokens"}) {
    if (const Value* v = s.body.find(reserved); v != nullptr) {
      throw Error::input(v->mark().known() ? v->mark() : s.body.mark(),
                         std::string("serve.body.") + reserved,
                         "is set by bench-serve for every request",
                         std::string(reserved) == "model"        ? "use serve.model"
                         : std::string(reserved) == "max_tokens" ? "use serve.prompts.output_tokens"
                                                                 : "leave it out");
    }
  }

  s.mode = at("serve.load.mode").as_string();
  const Value& levels = at("serve.load.levels");
  for (const Value& l : levels.items()) s.levels.push_back(l.as_float());
  if (s.levels.empty()) {
    throw Error::input(levels.mark(), "serve.load.levels", "is empty, but benchmark is serve",
                       s.mode == "concurrency"
                           ? "give the concurrencies to measure, e.g. [1, 4, 16]"
                           : "give the request rates per second to measure, e.g. [1, 2, 4]");
  }
  if (s.closed_loop()) {
    for (const Value& l : levels.items()) {
      if (!l.is_int()) {
        throw Error::input(l.mark().known() ? l.mark() : levels.mark(), "serve.load.levels",
                           "a concurrency must be a whole number of requests, got " + l.describe(),
                           "write it without a decimal point");
      }
    }
  }
  s.burstiness = at("serve.load.burstiness").as_float();
  s.requests = at("serve.load.requests").as_int();
  s.duration_s = at("serve.load.duration_s").as_float();
  if (s.mode == "ramp") {
    if (s.levels.size() != 2) {
      throw Error::input(levels.mark(), "serve.load.levels",
                         "a ramp goes from one rate to another, so it needs two levels, got " +
                             std::to_string(s.levels.size()),
                         "e.g. [1, 16]: from 1 request/s to 16 over serve.load.duration_s");
    }
    if (s.duration_s <= 0) {
      throw Error::input(at("serve.load.duration_s").mark(), "serve.load.duration_s",
                         "is 0, but a ramp's rate is a function of time over its duration",
                         "set it, e.g. 60");
    }
  }
  s.warmup_requests = at("serve.load.warmup_requests").as_int();
  s.timeout_s = at("serve.load.timeout_s").as_float();
  s.seed = static_cast<std::uint64_t>(at("serve.load.seed").as_int());

  s.input_tokens = at("serve.prompts.input_tokens").as_int();
  s.output_tokens = at("serve.prompts.output_tokens").as_int();
  s.dataset = optional_text(at("serve.prompts.dataset"));
  s.dataset_fixed_output = at("serve.dataset_max_tokens").as_string() == "output_tokens";
  s.range_ratio = at("serve.prompts.range_ratio").as_float();
  const Value& ids = at("serve.prompts.token_ids");
  if (!ids.items().empty()) {
    const Value& low = ids.items().front();
    const Value& high = ids.items().back();
    if (ids.items().size() != 2 || !low.is_int() || !high.is_int() ||
        low.as_int() >= high.as_int()) {
      throw Error::input(ids.mark(), "serve.prompts.token_ids",
                         "must be two whole numbers [low, high] with low < high",
                         "e.g. [1000, 30000]: ids well inside the model's vocabulary");
    }
    if (s.api == "chat") {
      throw Error::input(ids.mark(), "serve.prompts.token_ids",
                         "prompts as token ids go to /v1/completions, and serve.api is chat",
                         "set serve.api completions, or leave serve.prompts.token_ids empty");
    }
    s.token_ids = std::make_pair(low.as_int(), high.as_int());
  }

  s.sla_ttft_s = seconds_of_ms(at("serve.sla.ttft_ms"));
  s.sla_tpot_s = seconds_of_ms(at("serve.sla.tpot_ms"));
  s.sla_e2e_s = seconds_of_ms(at("serve.sla.e2e_ms"));
  s.attainment = at("serve.sla.attainment").as_float();
  s.search = at("serve.sla.search").as_int();
  if (s.search > 0 && !s.has_sla()) {
    throw Error::input(at("serve.sla.search").mark(), "serve.sla.search",
                       "is " + std::to_string(s.search) + ", but no SLA bound is set",
                       "set serve.sla.ttft_ms, serve.sla.tpot_ms or serve.sla.e2e_ms");
  }
  if (s.search > 0 && s.mode == "ramp") {
    throw Error::input(at("serve.sla.search").mark(), "serve.sla.search",
                       "searches between levels, and a ramp has no levels to search between",
                       "use serve.load.mode poisson, gamma or concurrency");
  }
  return s;
}

}  // namespace sweepbench
