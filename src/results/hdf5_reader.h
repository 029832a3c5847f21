// Reading HDF5 for the rank files' reader (rank_reader.cc): attributes, 1-D datasets and compound
// tables, each read checked, and what cannot be read recorded as a problem ("NAME: what") rather
// than thrown or printed by HDF5. What it leaves out: which objects a rank file holds
// (rank_reader.cc, rank_fields.h). Only results/ includes it: it brings <hdf5.h>.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace sweepbench::h5 {

// An HDF5 id closed on scope exit (negative ids are "none").
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  Id(Id&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  Id& operator=(Id&&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// A numeric column to fill: its name, and where its values go (the pointer's type says which
// values: double, int64 or uint8).
struct Column {
  const char* name;
  std::variant<std::optional<std::vector<double>>*, std::optional<std::vector<std::int64_t>>*,
               std::optional<std::vector<std::uint8_t>>*>
      out;
};

// The native HDF5 type of values of type T.
template <typename T>
hid_t native_type() {
  if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  if constexpr (std::is_same_v<T, std::int64_t>) return H5T_NATIVE_INT64;
  return H5T_NATIVE_UINT8;
}
// The type of the values behind a Column's pointer.
template <typename Out>
using ValueOf = typename std::decay_t<decltype(*std::declval<Out>())>::value_type::value_type;

// Reads what an open file holds; whatever cannot be read is a problem in *problems, and nullopt
// (or nothing filled) for the caller.
class Reader {
 public:
  explicit Reader(std::vector<std::string>* problems) : problems_(problems) {}

  void problem(const std::string& where, const std::string& what) {
    problems_->push_back(where + ": " + what);
  }

  // A scalar attribute of `where` (a file or group), or nullopt with a problem.
  std::optional<std::string> text(hid_t where, const std::string& prefix, const char* name);
  // Our files hold UTF-8 text; anything else is damage, and would reach tables raw.
  std::optional<std::string> utf8(const std::string& prefix, const char* name, std::string text);
  std::optional<std::int64_t> integer(hid_t where, const std::string& prefix, const char* name);
  std::optional<double> real(hid_t where, const std::string& prefix, const char* name);

  // A 1-D numeric dataset converted to T; nullopt with a problem when absent or not numeric.
  template <typename T>
  std::optional<std::vector<T>> numbers(hid_t group, const std::string& prefix, const char* name,
                                        hid_t mem_type) {
    Id d = open_dataset(group, prefix, name);
    if (!d.ok()) return std::nullopt;
    Id type(H5Dget_type(d.get()), H5Tclose);
    H5T_class_t cls = H5Tget_class(type.get());
    if (cls != H5T_INTEGER && cls != H5T_FLOAT) {
      problem(prefix + name, "is not numeric");
      return std::nullopt;
    }
    std::optional<size_t> n = length(d.get(), type.get(), prefix + name);
    if (!n) return std::nullopt;
    std::vector<T> out(*n);
    if (*n > 0 && H5Dread(d.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) {
      problem(prefix + name, "cannot be read");
      return std::nullopt;
    }
    return out;
  }
  std::optional<std::vector<std::string>> strings(hid_t group, const std::string& prefix,
                                                  const char* name);

  // Members of a 1-D compound dataset (a table), each converted to its column's type: one open
  // and one read for every column asked for. A column that is absent or not numeric stays
  // nullopt, with a problem.
  void table(hid_t where, const char* name, const std::vector<Column>& columns);

  // A group, or an id that is not ok with a problem (missing, or not a group).
  Id group(hid_t file, const char* name);

 private:
  // A variable-length string in memory with the file's character set (HDF5 does not convert
  // between ASCII and UTF-8).
  static Id string_type(hid_t file_type);
  // Opening first and asking why only on failure: each lookup by name costs (docs/performance.md).
  Id open_attr(hid_t where, const std::string& prefix, const char* name, H5T_class_t want);
  Id open_dataset(hid_t group, const std::string& prefix, const char* name);
  std::optional<size_t> length(hid_t dataset, hid_t type, const std::string& where);

  std::vector<std::string>* problems_;
};

}  // namespace sweepbench::h5
