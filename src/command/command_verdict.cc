// metric_eval.h's judgement of a finished command: its status and reason from how it ended, its
// success and fail patterns, its required metrics and, for a failure, its out-of-memory patterns.
#include <csignal>

#include "command/metric_eval.h"
#include "command/metric_reading.h"
#include "config/parsers/parser.h"
#include "os/process.h"
#include "text/text.h"
#include "text/user_regex.h"

namespace sweepbench {
namespace {

// The first line of the run's output matching one of `patterns`: "stderr line 12: TEXT".
std::optional<std::string> first_match(const std::vector<std::string>& patterns,
                                       const CommandOutputs& o) {
  std::vector<UserRegex> res;
  for (const std::string& p : patterns) res.emplace_back(p, Mark(), "");
  std::optional<std::string> hit;
  // Not structured bindings: clang 14 (the fuzz preset) cannot capture them in a lambda.
  for (const std::pair<std::string, std::string>& source :
       {std::pair<std::string, std::string>{"stderr", o.stderr_path}, {"stdout", o.stdout_path}}) {
    const std::string& name = source.first;
    const std::string& path = source.second;
    try {
      for_each_line(path, [&](const std::string& line, size_t n, bool) {
        if (hit) return;
        for (const UserRegex& re : res) {
          if (re.search(line)) {
            hit = name + " line " + std::to_string(n) + ": " + first_line(trim(line), 200);
            return;
          }
        }
      });
    } catch (const Error&) {
      // An unreadable log matches nothing; read_metrics says why.
    }
    if (hit) break;
  }
  return hit;
}

// What a failed program said: the exception of the last Python traceback on its stderr (with
// up to two indented lines after it, where pydantic and others put the real message), else its
// last line. A traceback's last line is often a link ("For further information visit ...").
std::string program_error(const CommandOutputs& o) {
  std::string last, exception;
  bool in_traceback = false;
  int details = -1;  // >= 0: indented lines taken after the exception line
  try {
    for_each_line(o.stderr_path, [&](const std::string& line, size_t, bool) {
      std::string t = trim(line);
      if (t.empty() || is_help_pointer(t)) return;
      last = t;
      const bool indented = line[0] == ' ' || line[0] == '\t';
      if (t == "Traceback (most recent call last):") {
        in_traceback = true;
        details = -1;
        return;
      }
      if (in_traceback) {
        if (indented) return;  // a frame and its code
        in_traceback = false;
        exception = t;
        details = 0;
        return;
      }
      if (details >= 0) {
        if (!indented || details == 2) {
          details = -1;
        } else if (t.rfind("For further information", 0) != 0) {
          exception += " " + t;
          ++details;
        }
      }
    });
  } catch (const Error&) {
  }
  return first_line(exception.empty() ? last : exception, 300);
}

}  // namespace

CommandVerdict judge_command(const CommandSpec& spec, const CommandEnd& end,
                             const std::vector<CommandMetric>& metrics, const CommandOutputs& o) {
  const std::string what = end.term_signal != 0 ? "killed by " + signal_name(end.term_signal)
                                                : "exit code " + std::to_string(end.exit_code);
  if (end.stop_signal != 0) {
    bool time = end.stop_signal == SIGUSR1 || end.stop_signal == SIGTERM;
    return {
        time ? "timeout" : "cancelled",
        "bench-command received " + signal_name(end.stop_signal) +
            (time                         ? " (the time limit is near)"
             : end.stop_signal == SIGUSR2 ? " (bench-sweep's stop)"
                                          : "") +
            (end.stopped_while_reading
                 ? " while it read the program's output, whose metrics may be incomplete; "
                   "the program: " +
                       what
                 : " and passed it on; the program: " + (end.started ? what : "never started"))};
  }
  if (!end.started) return {"failed", end.start_error};
  std::vector<std::string> problems;
  if (end.term_signal != 0) {
    std::string why = "the program was " + what;
    if (end.term_signal == SIGKILL) why += " (the kernel's out-of-memory killer, or a user)";
    problems.push_back(why);
  } else if (spec.exit_code && end.exit_code != *spec.exit_code) {
    std::string last = program_error(o);
    problems.push_back(
        "the program ended with " + what +
        (*spec.exit_code != 0 ? " (expected " + std::to_string(*spec.exit_code) + ")" : "") +
        (last.empty() ? "" : ": " + last));
  }
  for (const std::string& p : spec.fail) {
    if (auto hit = first_match({p}, o)) {
      problems.push_back("the fail pattern '" + p + "' matched " + *hit);
      break;
    }
  }
  for (const std::string& p : spec.match) {
    if (!first_match({p}, o)) {
      problems.push_back("the success pattern '" + p + "' matched no line of stdout or stderr");
      break;
    }
  }
  // The reason names every missing metric, and says why of the first (the others' are in the
  // point's log and rank file): four copies of a parser's pattern said nothing more.
  std::vector<std::string> missing;
  const CommandMetric* first_missing = nullptr;
  bool any = false;
  for (const CommandMetric& m : metrics) {
    any = any || m.found;
    if (m.required && !m.found) {
      missing.push_back(m.name);
      if (first_missing == nullptr) first_missing = &m;
    }
  }
  // A parser knows what its program must be told to write (llama-bench without -o jsonl said
  // only that nothing was found): said when none of the metrics was found.
  const Parser* parser = find_parser(spec.parser);
  const std::string hint =
      any || parser == nullptr || parser->ask.empty() ? std::string() : " (" + parser->ask + ")";
  if (!missing.empty()) {
    problems.push_back("required metric" + std::string(missing.size() > 1 ? "s" : "") +
                       " not found: " + join(missing, ", ") + " (" +
                       (missing.size() > 1 ? first_missing->name + ": " : "") +
                       first_missing->problem + ")" + hint);
  } else if (!metrics.empty() && !any) {
    problems.push_back("no metric was found in the program's output" + hint);
  }
  if (problems.empty()) return {"ok", ""};
  if (auto oom = first_match(spec.oom_patterns, o)) {
    return {"oom", "out of memory: " + *oom};
  }
  return {"failed", problems.front()};
}

}  // namespace sweepbench
