// A run's rows, live progress line and summary (run_output.h).
#include "launch/run_output.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "os/process.h"
#include "text/exit_codes.h"
#include "text/text.h"

namespace sweepbench {
namespace {

std::string clock_text(double seconds) {
  long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld", s / 60, s % 60);
  }
  return buf;
}

size_t terminal_columns() {
  winsize w{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
  return 80;
}

}  // namespace

std::string seconds_text(double s) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << s;
  return out.str();
}

bool RunReport::all_ok() const {
  for (const auto& [status, count] : counts) {
    const size_t asked =
        status == PointStatus::kSkipped ? skipped_by_memory_limit + skipped_as_precise : 0;
    if (status != PointStatus::kOk && count > asked) return false;
  }
  return stop_signal == 0 && unusable.empty();
}

Progress::Progress(std::ostream* terminal)
    : out_(terminal != nullptr ? *terminal : std::cout), live_(terminal != nullptr) {}

void Progress::start(size_t total) {
  total_ = total;
  t0_ = std::chrono::steady_clock::now();
  draw();
}

void Progress::done(std::optional<PointStatus> status) {
  ++done_;
  if (status) {
    ++ran_;
    ++counts_[*status];
  }
}

void Progress::tick(size_t running) {
  running_ = running;
  auto now = std::chrono::steady_clock::now();
  if (live_ && now - drawn_ >= std::chrono::seconds(1)) {
    clear();
    draw();
  }
}

std::string Progress::eta_text() const {
  if (ran_ == 0) return "";
  return " [" + std::to_string(done_) + "/" + std::to_string(total_) + " done, " +
         clock_text(elapsed()) + " elapsed, about " + clock_text(left()) + " left]";
}

void Progress::clear() {
  if (!live_ || !shown_) return;
  out_ << "\r\033[K";
  shown_ = false;
}

void Progress::draw() {
  if (!live_ || total_ == 0 || done_ >= total_) return;
  std::string text =
      "bench-sweep: " + std::to_string(done_) + "/" + std::to_string(total_) + " done";
  std::string counts;
  for (PointStatus s : all_point_statuses()) {
    if (auto it = counts_.find(s); it != counts_.end()) {
      counts += (counts.empty() ? "" : ", ") + to_string(s) + " " + std::to_string(it->second);
    }
  }
  if (!counts.empty()) text += " (" + counts + ")";
  text += ", " + std::to_string(running_) + " running, " + clock_text(elapsed()) + " elapsed";
  if (ran_ > 0) text += ", about " + clock_text(left()) + " left";
  if (size_t width = terminal_columns(); width > 1 && text.size() >= width) {
    text.resize(width - 1);
  }
  out_ << text;
  out_.flush();
  shown_ = true;
  drawn_ = std::chrono::steady_clock::now();
}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

double Progress::left() const {
  return static_cast<double>(total_ - done_) * elapsed() / static_cast<double>(ran_);
}

void RunOutput::row(const SweepPoint& p, const std::string& status, const std::string& note) {
  std::ostringstream line;
  line << std::setw(7) << p.index << "  " << std::left << std::setw(10) << status << std::right
       << "  " << p.tag << (note.empty() ? "" : "  " + note) << "\n";
  say(line.str());
}

void RunOutput::say(const std::string& text) {
  progress_.clear();
  out_ << text;
  out_.flush();
  progress_.draw();
}

void RunOutput::summary(RunReport& report, size_t n, const std::string& out_dir, bool dry_run) {
  out_ << "# summary:";
  for (PointStatus s : all_point_statuses()) {
    if (report.counts[s] > 0) out_ << " " << to_string(s) << " " << report.counts[s];
  }
  out_ << " (" << plural(n, "point") << ")\n";
  if (dry_run) return;
  if (report.busy_elsewhere > 0) {
    out_ << "# " << plural(report.busy_elsewhere, "point")
         << " still running elsewhere: another runner holds "
         << (report.busy_elsewhere == 1 ? "it" : "them") << "; `bench-sweep status --out "
         << out_dir << "` follows them\n";
  }
  if (!report.unusable.empty()) {
    out_ << "# " << plural(report.unusable.size(), "point")
         << " not run: its directory holds what sweepbench cannot use (exit " << kExitIo
         << "): " << join(report.unusable, "; ") << "\n";
  }
  if (!report.missed_reference.empty() || report.passed_reference > 0) {
    out_ << "# references: " << report.passed_reference << " passed, "
         << report.missed_reference.size() << " missed"
         << (report.missed_reference.empty() ? std::string()
                                             : " (" + join(report.missed_reference, ", ") + ")")
         << "\n";
  }
  if (report.stop_signal != 0) {
    out_ << "# STOPPED by " << signal_name(report.stop_signal)
         << ": run the same command again to go on where it stopped\n";
  } else if (report.all_ok() && !report.missed_reference.empty()) {
    out_ << "# MISSED REFERENCES: every point is ok, but "
         << plural(report.missed_reference.size(), "point")
         << " missed a performance reference (exit " << kExitReferenceMissed
         << "); DIR/<tag>/status.json says which (DIR = " << out_dir << ")\n";
  } else if (report.all_ok()) {
    out_ << "# OK: every point is ok; results in " << out_dir << "/<tag>/\n";
  } else {
    out_ << "# NOT ALL OK: see DIR/<tag>/status.json and DIR/<tag>/logs/ (DIR = " << out_dir
         << "); `bench-sweep status --out " << out_dir << "` lists them\n";
  }
}

}  // namespace sweepbench
