#include "postprocess/report_html.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "config/table.h"
#include "text/digest.h"
#include "text/text.h"

namespace sweepbench {

std::string html_escape(std::string_view text) {
  const std::string valid = valid_utf8(text);
  std::string out;
  out.reserve(valid.size() + valid.size() / 8);
  for (char c : valid) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') break;
        if (c == 0x7f) break;
        out += c;
    }
  }
  return out;
}

std::string report_number(double v) { return std::isnan(v) ? "" : human_number(v); }

namespace {

// Colours that stay apart for the common kinds of colour blindness (Okabe and Ito's), in order.
const char* const kPalette[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                "#56b4e9", "#d55e00", "#f0e442", "#000000"};
constexpr size_t kPaletteSize = sizeof kPalette / sizeof kPalette[0];

// Plot area inside the SVG's viewBox.
constexpr double kWidth = 720, kHeight = 340;
constexpr double kLeft = 72, kRight = 16, kTop = 34, kBottom = 58;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// Round tick positions covering [lo, hi]: about `count`, a step of 1, 2 or 5 times a power of ten.
std::vector<double> nice_ticks(double lo, double hi, int count) {
  std::vector<double> ticks;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  const double raw = (hi - lo) / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
    if (ticks.size() > 50) break;
  }
  return ticks;
}

// A point is drawn when its values are finite and below 1e300: beyond, the axis' range itself
// overflows (its tip still says what it is in the table).
bool drawable(const ChartPoint& p) {
  return std::isfinite(p.x) && std::isfinite(p.y) && std::fabs(p.x) < 1e300 &&
         std::fabs(p.y) < 1e300;
}
bool drawable_bar(const ChartPoint& p) {
  return std::isfinite(p.low) && std::isfinite(p.high) && std::fabs(p.low) < 1e300 &&
         std::fabs(p.high) < 1e300;
}

struct Scale {
  double lo = 0, hi = 1, from = 0, to = 1;
  bool log2 = false;
  double operator()(double v) const {
    const double a = log2 ? std::log2(v) : v, l = log2 ? std::log2(lo) : lo,
                 h = log2 ? std::log2(hi) : hi;
    return h == l ? (from + to) / 2 : from + (a - l) / (h - l) * (to - from);
  }
};

}  // namespace

std::string svg_chart(const Chart& c) {
  // The ranges of the finite values.
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  size_t drawn = 0;
  for (const ChartSeries& s : c.series) {
    for (const ChartPoint& p : s.points) {
      if (!drawable(p) || (c.log2_x && p.x <= 0)) continue;
      ++drawn;
      xlo = std::min(xlo, p.x);
      xhi = std::max(xhi, p.x);
      ylo = std::min(ylo, p.y);
      yhi = std::max(yhi, p.y);
      if (drawable_bar(p)) {
        ylo = std::min(ylo, p.low);
        yhi = std::max(yhi, p.high);
      }
    }
  }
  for (const ChartLevel& l : c.levels) {
    if (std::isfinite(l.y)) ylo = std::min(ylo, l.y), yhi = std::max(yhi, l.y);
  }
  if (!c.x_categories.empty()) {
    xlo = -0.5;
    xhi = static_cast<double>(c.x_categories.size()) - 0.5;
  }
  if (drawn == 0) ylo = 0, yhi = 1, xlo = std::isfinite(xlo) ? xlo : 0, xhi = xlo + 1;
  if (c.y_from_zero && ylo > 0) ylo = 0;
  if (c.y_from_zero && yhi < 0) yhi = 0;
  if (yhi == ylo) ylo -= std::fabs(ylo) * 0.1 + 1, yhi += std::fabs(yhi) * 0.1 + 1;
  if (!c.y_from_zero || ylo < 0) {
    const double pad = (yhi - ylo) * 0.08;
    ylo -= (c.y_from_zero && ylo == 0) ? 0 : pad;
    yhi += pad;
  } else {
    yhi += (yhi - ylo) * 0.05;
  }
  if (c.x_categories.empty() && xhi == xlo) {
    if (c.log2_x) {
      xlo /= 2, xhi *= 2;
    } else {
      xlo -= 1, xhi += 1;
    }
  } else if (c.x_categories.empty() && !c.log2_x) {
    const double pad = (xhi - xlo) * 0.04;
    xlo -= pad, xhi += pad;
  } else if (c.log2_x) {
    xlo /= 1.2, xhi *= 1.2;
  }
  Scale sx{xlo, xhi, kLeft, kWidth - kRight, c.log2_x && c.x_categories.empty()};
  Scale sy{ylo, yhi, kHeight - kBottom, kTop, false};

  std::string o;
  o += "<figure class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " +
       num(kWidth) + " " + num(kHeight) + "\" role=\"img\"><title>" + html_escape(c.title) +
       "</title>";
  o += "<text class=\"ctitle\" x=\"" + num(kLeft) + "\" y=\"18\">" + html_escape(c.title) +
       "</text>";
  // The y axis: grid lines and labels.
  for (double t : nice_ticks(ylo, yhi, 5)) {
    const double y = sy(t);
    o += "<line class=\"grid\" x1=\"" + num(kLeft) + "\" x2=\"" + num(kWidth - kRight) +
         "\" y1=\"" + num(y) + "\" y2=\"" + num(y) + "\"/><text class=\"tick\" x=\"" +
         num(kLeft - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" +
         html_escape(report_number(t)) + "</text>";
  }
  // The x axis: categories (at most about 16 labels shown), powers of two, or round ticks.
  const double base = kHeight - kBottom;
  auto xtick = [&](double x, const std::string& label) {
    o += "<line class=\"axis\" x1=\"" + num(sx(x)) + "\" x2=\"" + num(sx(x)) + "\" y1=\"" +
         num(base) + "\" y2=\"" + num(base + 4) + "\"/><text class=\"tick\" x=\"" + num(sx(x)) +
         "\" y=\"" + num(base + 16) + "\" text-anchor=\"middle\">" +
         html_escape(abbreviate_middle(label, 24)) + "</text>";
  };
  if (!c.x_categories.empty()) {
    // As many labels as fit side by side (11px type: about 6.5px a character).
    const size_t n = c.x_categories.size();
    size_t longest = 1;
    for (const std::string& l : c.x_categories) {
      longest = std::max(longest, std::min<size_t>(display_width(l), 24));
    }
    const double room = (kWidth - kLeft - kRight) / static_cast<double>(n);
    const size_t every =
        std::max<size_t>(1, static_cast<size_t>(std::ceil((longest * 6.5 + 10) / room)));
    for (size_t i = 0; i < n; i += every) xtick(static_cast<double>(i), c.x_categories[i]);
  } else if (sx.log2) {
    for (double t = std::exp2(std::ceil(std::log2(xlo))); t <= xhi; t *= 2) {
      xtick(t, report_number(t));
    }
  } else {
    for (double t : nice_ticks(xlo, xhi, 6)) xtick(t, report_number(t));
  }
  o += "<line class=\"axis\" x1=\"" + num(kLeft) + "\" x2=\"" + num(kWidth - kRight) + "\" y1=\"" +
       num(base) + "\" y2=\"" + num(base) + "\"/>";
  o += "<line class=\"axis\" x1=\"" + num(kLeft) + "\" x2=\"" + num(kLeft) + "\" y1=\"" +
       num(kTop) + "\" y2=\"" + num(base) + "\"/>";
  o += "<text class=\"label\" x=\"" + num((kLeft + kWidth - kRight) / 2) + "\" y=\"" +
       num(kHeight - 8) + "\" text-anchor=\"middle\">" + html_escape(c.x_label) + "</text>";
  o += "<text class=\"label\" transform=\"translate(14," + num((kTop + base) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">" + html_escape(c.y_label) + "</text>";
  // Marks and levels under the points.
  for (const ChartMark& m : c.marks) {
    if (!std::isfinite(m.x)) continue;
    const double x = sx(m.x);
    o += "<g class=\"mark " +
         std::string(m.kind == "worse"    ? "worse"
                     : m.kind == "better" ? "better"
                                          : "env") +
         "\"><title>" + html_escape(m.tip) + "</title><line x1=\"" + num(x) + "\" x2=\"" + num(x) +
         "\" y1=\"" + num(kTop) + "\" y2=\"" + num(base) + "\"/>";
    if (!m.label.empty()) {
      // A change's label at the top, an environment change's at the bottom: both may be at
      // one place.
      const double y = m.kind == "worse" || m.kind == "better" ? kTop + 10 : base - 6;
      o += "<text x=\"" + num(x + 3) + "\" y=\"" + num(y) + "\">" +
           html_escape(abbreviate_end(m.label, 28)) + "</text>";
    }
    o += "</g>";
  }
  for (const ChartLevel& l : c.levels) {
    if (!std::isfinite(l.y)) continue;
    o += "<line class=\"level\" x1=\"" + num(sx(l.x0)) + "\" x2=\"" + num(sx(l.x1)) + "\" y1=\"" +
         num(sy(l.y)) + "\" y2=\"" + num(sy(l.y)) + "\"/>";
  }
  // The series: error bars, the line, the points.
  for (size_t i = 0; i < c.series.size(); ++i) {
    const ChartSeries& s = c.series[i];
    const std::string colour = kPalette[i % kPaletteSize];
    std::vector<const ChartPoint*> points;
    for (const ChartPoint& p : s.points) {
      if (drawable(p) && !(sx.log2 && p.x <= 0)) {
        points.push_back(&p);
      }
    }
    std::stable_sort(points.begin(), points.end(),
                     [](const ChartPoint* a, const ChartPoint* b) { return a->x < b->x; });
    o += "<g class=\"series\" stroke=\"" + colour + "\" fill=\"" + colour + "\">";
    if (s.line && points.size() > 1) {
      o += "<polyline fill=\"none\" points=\"";
      for (const ChartPoint* p : points) o += num(sx(p->x)) + "," + num(sy(p->y)) + " ";
      o += "\"/>";
    }
    for (const ChartPoint* p : points) {
      const double x = sx(p->x);
      o += "<g class=\"pt\"><title>" + html_escape(p->tip) + "</title>";
      if (drawable_bar(*p)) {
        o += "<line class=\"bar\" x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" +
             num(sy(p->low)) + "\" y2=\"" + num(sy(p->high)) + "\"/>";
      }
      o += "<circle cx=\"" + num(x) + "\" cy=\"" + num(sy(p->y)) + "\" r=\"3.5\"" +
           (p->hollow ? " fill=\"#fff\"" : "") + "/></g>";
    }
    o += "</g>";
  }
  if (drawn == 0) {
    o += "<text class=\"label\" x=\"" + num((kLeft + kWidth) / 2) + "\" y=\"" +
         num((kTop + base) / 2) + "\" text-anchor=\"middle\">no values</text>";
  }
  o += "</svg>";
  bool named = false;
  for (const ChartSeries& s : c.series) named = named || !s.name.empty();
  if (named) {
    o += "<figcaption class=\"legend\">";
    for (size_t i = 0; i < c.series.size(); ++i) {
      o += "<span><i style=\"background:" + std::string(kPalette[i % kPaletteSize]) + "\"></i>" +
           html_escape(c.series[i].name) + "</span> ";
    }
    o += "</figcaption>";
  }
  o += "</figure>\n";
  return o;
}

std::string html_table(const HtmlTable& t, bool filter) {
  std::string o;
  const std::string id = html_escape(t.id);
  if (filter) {
    o += "<p class=\"filter\"><input type=\"search\" data-filter=\"" + id +
         "\" placeholder=\"Filter rows\" aria-label=\"Filter the rows of " + id + "\"> <span " +
         "class=\"count\" data-count=\"" + id + "\">" + plural(t.rows.size(), "row") +
         "</span></p>";
  }
  o += "<div class=\"scroll\"><table class=\"sortable\" id=\"" + id + "\"><thead><tr>";
  for (const std::string& c : t.columns) {
    o += "<th tabindex=\"0\" title=\"Sort by " + html_escape(c) + "\">" + html_escape(c) + "</th>";
  }
  o += "</tr></thead><tbody>\n";
  for (const auto& row : t.rows) {
    o += "<tr>";
    for (const HtmlCell& cell : row) {
      o += "<td";
      if (!cell.css.empty()) o += " class=\"" + html_escape(cell.css) + "\"";
      if (std::isfinite(cell.sort)) o += " data-v=\"" + format_float_repr(cell.sort) + "\"";
      if (!cell.tip.empty()) o += " title=\"" + html_escape(cell.tip) + "\"";
      o += ">" + html_escape(cell.text) + "</td>";
    }
    o += "</tr>\n";
  }
  o += "</tbody></table></div>\n";
  return o;
}

const std::string& report_script() {
  // Sorting: numbers (data-v, else the cell's leading number) before text, empty cells last
  // either way. Filtering: rows whose text contains every word typed. #sort=ID:COLUMN[:desc] in
  // the address sorts a table on load. Any error is kept on the <html> element (data-error) for
  // a person to see in the inspector and for the tests; data-ready says the script ran.
  static const std::string script = R"JS(
(function () {
  'use strict';
  var root = document.documentElement;
  window.addEventListener('error', function (e) {
    root.setAttribute('data-error', String(e.message));
  });
  function key(td) {
    var v = td.getAttribute('data-v');
    var text = td.textContent;
    var n = parseFloat(v !== null ? v : text);
    return {empty: (text === '' || text === '-') && v === null, n: isNaN(n) ? null : n, s: text};
  }
  function sortBy(table, col, dir) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[col]), y = key(b.cells[col]);
      if (x.empty !== y.empty) return x.empty ? 1 : -1;
      var c;
      if (x.n !== null && y.n !== null) c = x.n - y.n;
      else if (x.n !== null) c = -1;
      else if (y.n !== null) c = 1;
      else c = x.s < y.s ? -1 : (x.s > y.s ? 1 : 0);
      return dir * c;
    });
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) { frag.appendChild(r); });
    body.appendChild(frag);
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      if (i === col) th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      function go() {
        sortBy(table, i, th.getAttribute('aria-sort') === 'ascending' ? -1 : 1);
      }
      th.addEventListener('click', go);
      th.addEventListener('keydown', function (e) { if (e.key === 'Enter') go(); });
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll('input[data-filter]'), function (box) {
    var table = document.getElementById(box.getAttribute('data-filter'));
    var count = document.querySelector('[data-count="' + table.id + '"]');
    box.addEventListener('input', function () {
      var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
        var text = r.textContent.toLowerCase();
        var keep = words.every(function (w) { return text.indexOf(w) >= 0; });
        r.hidden = !keep;
        if (keep) shown += 1;
      });
      count.textContent = shown + ' of ' + table.tBodies[0].rows.length + ' rows';
    });
  });
  var hash = '';
  try { hash = decodeURIComponent(location.hash); } catch (e) { hash = ''; }
  var m = /^#sort=([^:]+):(.+?)(:desc)?$/.exec(hash);
  if (m) {
    var table = document.getElementById(m[1]);
    if (table) {
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
        if (th.textContent === m[2]) sortBy(table, i, m[3] ? -1 : 1);
      });
    }
  }
  // How long the page took to open: from the start of its loading to here (the benchmark's
  // load time, bench/report_speed.py).
  root.setAttribute('data-ready-ms', String(Math.round(performance.now())));
  root.setAttribute('data-ready', String(document.querySelectorAll('svg').length));
})();
)JS";
  return script;
}

std::string csp_sha256(std::string_view text) {
  static const char* const digits = "0123456789abcdef";
  const std::string hex = sha256_hex(text);
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    const auto nibble = [&](char ch) {
      return static_cast<int>(std::string_view(digits).find(ch));
    };
    bytes += static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1]));
  }
  static const char* const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "sha256-";
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const unsigned a = static_cast<unsigned char>(bytes[i]);
    const unsigned b = i + 1 < bytes.size() ? static_cast<unsigned char>(bytes[i + 1]) : 0;
    const unsigned c = i + 2 < bytes.size() ? static_cast<unsigned char>(bytes[i + 2]) : 0;
    const unsigned n = a << 16 | b << 8 | c;
    out += b64[n >> 18 & 63];
    out += b64[n >> 12 & 63];
    out += i + 1 < bytes.size() ? b64[n >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? b64[n & 63] : '=';
  }
  return out;
}

std::string html_page(const std::string& title, const std::string& body) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  // Nothing but this page's own style and its one script (by hash); no network, no other
  // script, no event handler attribute, no plugin, no form sent anywhere.
  o += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
       "style-src 'unsafe-inline'; img-src data:; script-src '" +
       csp_sha256(report_script()) + "'; form-action 'none'; base-uri 'none'\">\n";
  o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  o += "<meta name=\"generator\" content=\"sweepbench\">\n";
  o += "<title>" + html_escape(title) + "</title>\n<style>\n";
  o += R"CSS(body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em auto;
max-width:1400px;padding:0 1em;color:#1b1b1b}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
h3{font-size:1em;margin:1.2em 0 .3em}.meta{color:#555}.meta code{color:#1b1b1b}
.charts{display:flex;flex-wrap:wrap;gap:1em}.chart{margin:0;flex:1 1 560px;max-width:760px}
.chart svg{width:100%;height:auto;border:1px solid #e4e4e4;background:#fff}
.ctitle{font-size:13px;font-weight:600}.tick{font-size:11px;fill:#444}.label{font-size:12px;fill:#222}
.grid{stroke:#eee}.axis{stroke:#888}.series polyline{stroke-width:1.5}.bar{stroke-width:1.5}
.level{stroke:#555;stroke-width:2;stroke-dasharray:6 3}
.mark line{stroke-width:1.5}.mark text{font-size:11px}
.mark.worse line{stroke:#c0392b}.mark.worse text{fill:#c0392b}
.mark.better line{stroke:#1e8449}.mark.better text{fill:#1e8449}
.mark.env line{stroke:#777;stroke-dasharray:3 3}.mark.env text{fill:#555}
.legend{font-size:12px;color:#333}.legend span{margin-right:1em;white-space:nowrap}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
.scroll{overflow-x:auto}table{border-collapse:collapse;font-size:13px}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;white-space:nowrap}
th{position:sticky;top:0;background:#f6f6f6;cursor:pointer;user-select:none}
th[aria-sort=ascending]::after{content:" \25B2"}th[aria-sort=descending]::after{content:" \25BC"}
td[data-v]{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:#c0392b;font-weight:600}.good{color:#1e8449}.muted{color:#777}
.filter input{padding:3px 6px;width:20em}.count{color:#666;font-size:12px}
details{margin:.5em 0}summary{cursor:pointer}
)CSS";
  o += "</style>\n</head>\n<body>\n" + body + "<script>" + report_script() +
       "</script>\n</body></html>\n";
  return o;
}

}  // namespace sweepbench
