#include "postprocess/history_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "metrics/summary.h"
#include "postprocess/report_html.h"
#include "text/text.h"

namespace sweepbench {

namespace {

// A run's start as a figure's tick shows it: "11-20 08:00" (the year is in the tips).
std::string tick_time(const std::string& started) {
  std::string t = started.substr(0, 16);
  if (t.size() > 10 && t[10] == 'T') t[10] = ' ';
  return t.size() > 5 ? t.substr(5) : t;
}

std::string labels_text(const std::map<std::string, std::string>& labels) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : labels) parts.push_back(k + "=" + v);
  return join(parts, " ");
}

// One series' figure: each run's value with its interval in the order they ran, the level of
// each stretch between changes, each change found (red worse, green better) and each
// environment change (grey, dashed) between two of its runs.
Chart series_chart(const HistorySeriesView& v, const CheckResult& check) {
  Chart c;
  const HistoryRun& last = *v.runs.back();
  c.title = last.sweep + "/" + last.tag + " · " + v.metric;
  c.x_label = "run (oldest first)";
  c.y_label = v.unit.empty() ? v.metric : v.metric + " (" + v.unit + ")";
  c.y_from_zero = false;
  ChartSeries s;
  s.line = true;
  for (size_t i = 0; i < v.runs.size(); ++i) {
    const HistoryRun& r = *v.runs[i];
    const HistoryMetric& m = *v.values[i];
    c.x_categories.push_back(tick_time(r.started));
    ChartPoint p;
    p.x = static_cast<double>(i);
    p.y = m.value;
    p.low = m.ci_low;
    p.high = m.ci_high;
    p.tip = r.started + "\n" + v.metric + " " + report_number(m.value) +
            (std::isfinite(m.ci_low) && std::isfinite(m.ci_high)
                 ? " [" + report_number(m.ci_low) + ", " + report_number(m.ci_high) + "]"
                 : "") +
            (m.unit.empty() ? "" : " " + m.unit) + "\nenvironment " + r.environment_id +
            (r.labels.empty() ? "" : "\nlabels " + labels_text(r.labels)) + "\nsweep " + r.sweep +
            ", attempt " + std::to_string(r.attempt);
    s.points.push_back(p);
    if (i > 0 && r.environment_id != v.runs[i - 1]->environment_id) {
      const std::string what = field_differences(v.runs[i - 1]->environment, r.environment);
      const size_t space = what.find(' ');
      c.marks.push_back(
          {i - 0.5, "environment", what.substr(0, space), "environment changed: " + what});
    }
  }
  c.series.push_back(std::move(s));
  size_t from = 0;
  for (size_t k = 0; k < v.changes.size(); ++k) {
    const HistoryChange& h = check.changes[v.changes[k]];
    c.marks.push_back(
        {h.at - 0.5, h.worse ? "worse" : "better", signed_percent(h.change), h.what()});
    c.levels.push_back({from - 0.4, h.at - 0.6, h.before});
    from = h.at;
    if (k + 1 == v.changes.size()) {
      c.levels.push_back({from - 0.4, v.runs.size() - 0.6, h.after});
    }
  }
  return c;
}

}  // namespace

HistoryReport history_report(const std::vector<HistoryRun>& runs, const CheckResult& check,
                             const CheckOptions& co, const HistoryReportOptions& o) {
  HistoryReport report;
  std::map<std::string, size_t> statuses;
  std::string first, last;
  for (const HistoryRun& r : runs) {
    ++statuses[r.status];
    if (first.empty() || r.started < first) first = r.started;
    if (r.started > last) last = r.started;
  }
  const std::string title = o.title.empty() ? "sweepbench history: " + o.store : o.title;
  std::string body = "<header><h1>" + html_escape(title) + "</h1><p class=\"meta\">";
  std::vector<std::string> counts;
  for (const auto& [s, n] : statuses) counts.push_back(std::to_string(n) + " " + s);
  body +=
      html_escape(plural(runs.size(), "run") + (counts.empty() ? "" : ": " + join(counts, ", ")) +
                  (first.empty() ? "" : " · " + first + " to " + last));
  body += "<br>store <code>" + html_escape(o.store) + "</code>";
  if (!o.filters.empty()) body += " · runs " + html_escape(o.filters);
  body += " · made " + html_escape(utc_now_iso8601()) + " by bench-history report</p></header>\n";

  // The changes, as `bench-history check` prints them.
  char fdr[32];
  std::snprintf(fdr, sizeof fdr, "%g", co.fdr);
  body += "<section id=\"changes\"><h2>Changes</h2><p class=\"meta\">" +
          html_escape(plural(check.series, "series", "series") + " of " +
                      plural(check.runs, "ok run") + ", " + plural(check.tests, "test") + ": " +
                      plural(check.changes.size(), "change") + " at a false discovery rate of " +
                      fdr + " (bench-history check; docs/history.md)") +
          "</p>";
  if (!check.changes.empty()) {
    HtmlTable t;
    t.id = "changes-table";
    t.columns = {"verdict",
                 "metric",
                 "change",
                 "interval",
                 "since",
                 "before",
                 "after",
                 "unit",
                 "p",
                 "runs before",
                 "runs after",
                 "latest",
                 "environment change",
                 "labels change",
                 "sweep",
                 "tag",
                 "config"};
    for (const HistoryChange& h : check.changes) {
      const std::string css = h.worse ? "bad" : "good";
      t.rows.push_back({
          {h.worse ? "worse" : "better", kNoValue, "", css},
          {h.metric, kNoValue, h.what(), ""},
          {signed_percent(h.change), h.change * 100, "", css},
          {"[" + signed_percent(h.low) + ", " + signed_percent(h.high) + "]", h.low * 100, "", ""},
          {h.since, kNoValue, "", ""},
          {report_number(h.before), h.before, "", ""},
          {report_number(h.after), h.after, "", ""},
          {h.unit, kNoValue, "", ""},
          {report_number(h.p), h.p, "", ""},
          {std::to_string(h.runs_before), static_cast<double>(h.runs_before), "", ""},
          {std::to_string(h.runs_after), static_cast<double>(h.runs_after), "", ""},
          {h.latest ? "yes" : "no", kNoValue, "", ""},
          {h.environment, kNoValue, "", ""},
          {h.labels, kNoValue, "", ""},
          {h.sweep, kNoValue, "", ""},
          {h.tag, kNoValue, "", ""},
          {h.config_hash.substr(0, 12), kNoValue, h.config_hash, ""},
      });
    }
    body += html_table(t);
  }
  body += "</section>\n";

  // The figures: series with a change first (a latest regression before all), then the others
  // by their newest run; at most max_series of them.
  std::vector<size_t> order(check.series_views.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto rank = [&](size_t i) {
    const HistorySeriesView& v = check.series_views[i];
    bool worse_now = false;
    for (size_t c : v.changes) worse_now |= check.changes[c].worse && check.changes[c].latest;
    return worse_now ? 0 : v.changes.empty() ? 2 : 1;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (rank(a) != rank(b)) return rank(a) < rank(b);
    return check.series_views[a].runs.back()->started > check.series_views[b].runs.back()->started;
  });
  HtmlTable index;
  index.id = "series";
  index.columns = {"sweep", "tag",  "metric",  "runs",          "newest",
                   "value", "unit", "changes", "latest change", "config"};
  std::string charts;
  for (size_t n = 0; n < order.size(); ++n) {
    const HistorySeriesView& v = check.series_views[order[n]];
    const HistoryRun& r = *v.runs.back();
    std::string latest;
    double latest_value = kNoValue;
    std::string css;
    for (size_t c : v.changes) {
      if (!check.changes[c].latest) continue;
      latest = signed_percent(check.changes[c].change) + " since " +
               check.changes[c].since.substr(0, 10);
      latest_value = check.changes[c].change * 100;
      css = check.changes[c].worse ? "bad" : "good";
    }
    index.rows.push_back(
        {{r.sweep, kNoValue, "", ""},
         {r.tag, kNoValue, "", ""},
         {v.metric, kNoValue, "", ""},
         {std::to_string(v.runs.size()), static_cast<double>(v.runs.size()), "", ""},
         {r.started, kNoValue, "", ""},
         {report_number(v.values.back()->value), v.values.back()->value, "", ""},
         {v.unit, kNoValue, "", ""},
         {std::to_string(v.changes.size()), static_cast<double>(v.changes.size()), "", ""},
         {latest, latest_value, "", css},
         {r.config_hash.substr(0, 12), kNoValue, r.config_hash, ""}});
    if (n < o.max_series) {
      charts += svg_chart(series_chart(v, check));
      ++report.series_drawn;
    } else {
      ++report.series_left_out;
    }
  }
  body +=
      "<section id=\"figures\"><h2>Series</h2><p class=\"meta\">One configuration's metric "
      "over its ok runs, oldest first, each with its 95% interval. Dashed black: the level "
      "between changes; red and green lines: the changes found (worse, better); grey dashed "
      "lines: the environment changed. Hover for the values.</p>";
  if (report.series_left_out > 0) {
    body += "<p class=\"meta\">" +
            html_escape("The first " + std::to_string(report.series_drawn) + " are drawn; " +
                        plural(report.series_left_out, "more series", "more series") +
                        " are in the table (--max-series, or filters, to choose).") +
            "</p>";
  }
  body += "<div class=\"charts\">" + charts + "</div>";
  if (!index.rows.empty()) body += "<h3>Every series</h3>" + html_table(index);
  body += "</section>\n";

  // The runs that did not end ok: what a person looks at next.
  HtmlTable failed;
  failed.id = "not-ok";
  failed.columns = {"started", "status",  "reason",      "sweep",
                    "tag",     "attempt", "environment", "labels"};
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (it->status == "ok") continue;
    failed.rows.push_back({{it->started, kNoValue, "", ""},
                           {it->status, kNoValue, "", "bad"},
                           {it->reason, kNoValue, "", ""},
                           {it->sweep, kNoValue, "", ""},
                           {it->tag, kNoValue, "", ""},
                           {std::to_string(it->attempt), static_cast<double>(it->attempt), "", ""},
                           {it->environment_id, kNoValue, "", ""},
                           {labels_text(it->labels), kNoValue, "", ""}});
  }
  if (!failed.rows.empty()) {
    body +=
        "<section id=\"failed\"><h2>Runs that did not end ok</h2><p class=\"meta\">The "
        "newest first.</p>" +
        html_table(failed) + "</section>\n";
  }
  report.html = html_page(title, body);
  return report;
}

}  // namespace sweepbench
