#include "sweep/plan_output.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/config.h"
#include "core/fs.h"
#include "core/text.h"
#include "core/yaml_io.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kManifestSchemaVersion = 1;

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// The columns every printer shares.
Table plan_table(const Plan& plan) {
  Table t;
  bool show_scenario = plan.named_scenarios;
  bool show_repeat = plan.repeats > 1;
  t.header = {"index", "tag"};
  if (show_scenario) t.header.push_back("scenario");
  if (show_repeat) t.header.push_back("repeat");
  std::vector<std::string> shown = plan.varying_keys;
  shown.insert(shown.end(), plan.derived_varying_keys.begin(), plan.derived_varying_keys.end());
  for (const std::string& k : shown) t.header.push_back(k);
  for (const SweepPoint* p : plan.selected_points()) {
    std::vector<std::string> row = {std::to_string(p->index), p->tag};
    if (show_scenario) row.push_back(p->scenario);
    if (show_repeat) row.push_back(std::to_string(p->repeat));
    for (const std::string& k : shown) row.push_back(display_value(config_at(p->config, k)));
    t.rows.push_back(std::move(row));
  }
  return t;
}

Value varying_values(const Plan& plan, const SweepPoint& p) {
  Value v = Value::map();
  for (const std::string& k : plan.varying_keys) v.set(k, config_at(p.config, k));
  return v;
}

void print_table(const Plan& plan, std::ostream& out) {
  Table t = plan_table(plan);
  std::vector<size_t> width(t.header.size());
  for (size_t c = 0; c < t.header.size(); ++c) {
    width[c] = t.header[c].size();
    for (const auto& row : t.rows) width[c] = std::max(width[c], row[c].size());
  }
  width[0] = std::max<size_t>(width[0], 6);
  auto emit_row = [&](const std::vector<std::string>& row, bool header) {
    std::string line = header ? "#" : " ";
    // The index column is right-aligned, like a number; the rest are left-aligned.
    line += std::string(width[0] - row[0].size() - 1, ' ') + row[0];
    for (size_t c = 1; c < row.size(); ++c) {
      line += "  " + row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size(), ' ');
    }
    out << line << "\n";
  };
  out << "# sweep " << plan.sweep_name << " (" << plan.sweep_path << ")\n";
  emit_row(t.header, true);
  for (const auto& row : t.rows) emit_row(row, false);
  size_t selected = t.rows.size();
  out << "# " << plural(selected, "point");
  if (selected != plan.points.size()) out << " selected of " << plan.points.size();
  out << "\n";
}

void print_csv(const Plan& plan, std::ostream& out) {
  Table t = plan_table(plan);
  auto emit = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (c > 0) out << ",";
      out << csv_field(row[c]);
    }
    out << "\n";
  };
  std::vector<std::string> header = t.header;
  header.insert(header.begin() + 2, "config_hash");
  emit(header);
  std::vector<const SweepPoint*> points = plan.selected_points();
  for (size_t i = 0; i < t.rows.size(); ++i) {
    std::vector<std::string> row = t.rows[i];
    row.insert(row.begin() + 2, points[i]->config_hash);
    emit(row);
  }
}

void print_json(const Plan& plan, std::ostream& out) {
  Value root = Value::map();
  root.set("sweep", Value::string(plan.sweep_name));
  root.set("sweep_file", Value::string(plan.sweep_path));
  root.set("total_points", Value::integer(static_cast<std::int64_t>(plan.points.size())));
  Value keys = Value::list();
  for (const std::string& k : plan.varying_keys) keys.items().push_back(Value::string(k));
  root.set("varying_keys", keys);
  Value points = Value::list();
  for (const SweepPoint* p : plan.selected_points()) {
    Value e = Value::map();
    e.set("index", Value::integer(static_cast<std::int64_t>(p->index)));
    e.set("scenario", Value::string(p->scenario));
    e.set("repeat", Value::integer(p->repeat));
    e.set("tag", Value::string(p->tag));
    e.set("config_hash", Value::string(p->config_hash));
    e.set("varying", varying_values(plan, *p));
    e.set("config", p->config);
    points.items().push_back(std::move(e));
  }
  root.set("points", points);
  out << emit_json(root, 2, false) << "\n";
}

std::string hash_in_header(const std::string& text) {
  const std::string marker = "config_hash: ";
  size_t at = text.find(marker);
  if (at > 200) return "";  // it is in the first line, if anywhere (npos is larger too)
  std::string hex = text.substr(at + marker.size(), 64);
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) return "";
  return hex;
}

// The config_hash of an existing config.yaml: from its header, else by resolving it.
std::string existing_hash(const std::string& path, const std::string& text) {
  std::string hex = hash_in_header(text);
  if (!hex.empty()) return hex;
  try {
    return config_hash(resolve_config(normalize_partial_config(parse_yaml(text, path))));
  } catch (const Error&) {
    return "";
  }
}

Error conflict(const std::string& path, const std::string& message, const std::string& hint) {
  return Error(ErrorKind::kConflict, Mark::in(path), "", message, hint);
}

}  // namespace

PlanFormat parse_plan_format(const std::string& name) {
  if (name == "table") return PlanFormat::kTable;
  if (name == "json") return PlanFormat::kJson;
  if (name == "csv") return PlanFormat::kCsv;
  throw Error::input(Mark::in("--format " + name), "", "unknown format '" + name + "'",
                     "use table, json or csv");
}

void print_plan(const Plan& plan, PlanFormat format, std::ostream& out) {
  switch (format) {
    case PlanFormat::kTable:
      print_table(plan, out);
      return;
    case PlanFormat::kJson:
      print_json(plan, out);
      return;
    case PlanFormat::kCsv:
      print_csv(plan, out);
      return;
  }
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

Value merge_manifest(const Value& existing, const Plan& plan) {
  Value m = existing.is_map() ? existing : Value::map();
  m.set("schema_version", Value::integer(kManifestSchemaVersion));
  m.set("sweep", Value::string(plan.sweep_name));
  m.set("sweep_file",
        Value::string(fs::absolute(fs::path(plan.sweep_path)).lexically_normal().string()));
  Value keys = Value::list();
  for (const std::string& k : plan.varying_keys) keys.items().push_back(Value::string(k));
  m.set("varying_keys", keys);

  std::map<std::string, Value> old_entries;
  std::vector<std::string> old_order;
  if (const Value* points = existing.is_map() ? existing.find("points") : nullptr) {
    for (const Value& e : points->items()) {
      const Value* tag = e.is_map() ? e.find("tag") : nullptr;
      if (tag == nullptr || !tag->is_string()) continue;
      old_order.push_back(tag->as_string());
      old_entries[tag->as_string()] = e;
    }
  }
  Value points = Value::list();
  std::map<std::string, bool> in_sweep;
  for (const SweepPoint& p : plan.points) {
    in_sweep[p.tag] = true;
    auto old = old_entries.find(p.tag);
    if (!p.selected && old == old_entries.end()) continue;
    Value e = old == old_entries.end() ? Value::map() : old->second;
    e.set("index", Value::integer(static_cast<std::int64_t>(p.index)));
    e.set("scenario", Value::string(p.scenario));
    e.set("repeat", Value::integer(p.repeat));
    e.set("tag", Value::string(p.tag));
    e.set("config_hash", Value::string(p.config_hash));
    e.set("varying", varying_values(plan, p));
    e.erase("in_sweep");
    points.items().push_back(std::move(e));
  }
  for (const std::string& tag : old_order) {
    if (in_sweep.count(tag)) continue;
    Value e = old_entries[tag];
    e.set("in_sweep", Value::boolean(false));
    points.items().push_back(std::move(e));
  }
  m.set("points", points);
  return m;
}

PlanWriteResult write_plan(const Plan& plan, const std::string& out_dir) {
  fs::path root(out_dir);
  std::error_code ec;
  if (fs::exists(root, ec) && !fs::is_directory(root, ec)) {
    throw conflict(out_dir, "exists and is not a directory", "choose another --out");
  }

  // Check everything first; write nothing if anything is wrong.
  std::string manifest_path = (root / "manifest.json").string();
  std::optional<std::string> manifest_text = read_file_if_exists(manifest_path);
  Value existing_manifest;
  if (manifest_text) {
    try {
      existing_manifest = parse_yaml(*manifest_text, manifest_path);
    } catch (const Error& e) {
      throw conflict(manifest_path, "cannot be read: " + e.message(),
                     "move it away, or plan into another --out");
    }
    const Value* sweep = existing_manifest.is_map() ? existing_manifest.find("sweep") : nullptr;
    if (sweep == nullptr || !sweep->is_string()) {
      throw conflict(manifest_path, "is not a sweepbench manifest", "choose another --out");
    }
    if (sweep->as_string() != plan.sweep_name) {
      throw conflict(manifest_path,
                     "belongs to sweep '" + sweep->as_string() + "', not '" + plan.sweep_name + "'",
                     "each sweep gets its own --out directory");
    }
  }

  struct Pending {
    std::string dir;
    std::string path;
    std::string text;
  };
  std::vector<Pending> pending;
  std::vector<Error> conflicts;
  PlanWriteResult result;
  for (const SweepPoint* p : plan.selected_points()) {
    fs::path dir = root / p->tag;
    std::string path = (dir / "config.yaml").string();
    std::string text = point_config_file_text(p->config);
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
      conflicts.push_back(conflict(dir.string(), "exists and is not a directory",
                                   "move it away, or plan into another --out"));
      continue;
    }
    std::optional<std::string> old = read_file_if_exists(path);
    if (!old) {
      pending.push_back(Pending{dir.string(), path, text});
      ++result.written;
    } else if (*old == text) {
      ++result.unchanged;
    } else {
      std::string old_hash = existing_hash(path, *old);
      if (old_hash == p->config_hash) {
        pending.push_back(Pending{dir.string(), path, text});
        ++result.updated;
      } else {
        conflicts.push_back(conflict(
            path,
            "holds another config (config_hash " +
                (old_hash.empty() ? std::string("unreadable") : old_hash.substr(0, 12)) +
                ", the plan's is " + p->config_hash.substr(0, 12) + ")",
            "nothing was changed; plan into another --out, or move " + dir.string() + " away"));
      }
    }
  }
  if (!conflicts.empty()) {
    const Error& first = conflicts.front();
    std::string more =
        conflicts.size() > 1 ? " (and " + plural(conflicts.size() - 1, "more conflict") + ")" : "";
    throw Error(ErrorKind::kConflict, first.mark(), "", first.message() + more, first.hint());
  }

  make_directories(root.string());
  for (const Pending& w : pending) {
    make_directories(w.dir);
    write_file_atomic(w.path, w.text);
  }
  std::string new_manifest = emit_json(merge_manifest(existing_manifest, plan), 2, false) + "\n";
  if (!manifest_text || *manifest_text != new_manifest) {
    write_file_atomic(manifest_path, new_manifest);
    result.manifest_changed = true;
  }
  return result;
}

}  // namespace sweepbench
