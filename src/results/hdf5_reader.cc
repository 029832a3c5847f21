// hdf5_reader.h's reads: each checked, each failure a problem naming what could not be read.
#include "results/hdf5_reader.h"

#include <algorithm>
#include <cstring>
#include <variant>

#include "text/text.h"

namespace sweepbench::h5 {

std::optional<std::string> Reader::text(hid_t where, const std::string& prefix, const char* name) {
  Id a = open_attr(where, prefix, name, H5T_STRING);
  if (!a.ok()) return std::nullopt;
  Id type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tis_variable_str(type.get()) > 0) {
    Id mem = string_type(type.get());
    char* value = nullptr;
    if (H5Aread(a.get(), mem.get(), &value) < 0) {
      problem(prefix + name, "cannot be read");
      return std::nullopt;
    }
    std::string out(value != nullptr ? value : "");
    if (value != nullptr) H5free_memory(value);
    return utf8(prefix, name, std::move(out));
  }
  size_t size = H5Tget_size(type.get());
  std::string out(size, '\0');
  if (size > 0 && H5Aread(a.get(), type.get(), out.data()) < 0) {
    problem(prefix + name, "cannot be read");
    return std::nullopt;
  }
  return utf8(prefix, name, out.substr(0, out.find('\0')));
}

std::optional<std::string> Reader::utf8(const std::string& prefix, const char* name,
                                        std::string text) {
  if (find_invalid_utf8(text) == std::string::npos) return text;
  problem(prefix + name, "is not valid UTF-8 text (damaged)");
  return std::nullopt;
}

std::optional<std::int64_t> Reader::integer(hid_t where, const std::string& prefix,
                                            const char* name) {
  Id a = open_attr(where, prefix, name, H5T_INTEGER);
  std::int64_t v = 0;
  if (!a.ok()) return std::nullopt;
  if (H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0) {
    problem(prefix + name, "cannot be read");
    return std::nullopt;
  }
  return v;
}

std::optional<double> Reader::real(hid_t where, const std::string& prefix, const char* name) {
  Id a = open_attr(where, prefix, name, H5T_FLOAT);
  double v = 0;
  if (!a.ok()) return std::nullopt;
  if (H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v) < 0) {
    problem(prefix + name, "cannot be read");
    return std::nullopt;
  }
  return v;
}

std::optional<std::vector<std::string>> Reader::strings(hid_t group, const std::string& prefix,
                                                        const char* name) {
  Id d = open_dataset(group, prefix, name);
  if (!d.ok()) return std::nullopt;
  Id type(H5Dget_type(d.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) <= 0) {
    problem(prefix + name, "is not a list of strings");
    return std::nullopt;
  }
  std::optional<size_t> n = length(d.get(), type.get(), prefix + name);
  if (!n) return std::nullopt;
  std::vector<char*> raw(*n, nullptr);
  Id mem = string_type(type.get());
  // The conversion buffer: HDF5 zeroes 1 MiB by default for a few names. One list for every
  // read, as the file-access list of rank_reader.cc's open_rank_file.
  static const hid_t xfer = [] {
    hid_t p = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_buffer(p, 64 * 1024, nullptr, nullptr);
    return p;
  }();
  if (*n > 0 && H5Dread(d.get(), mem.get(), H5S_ALL, H5S_ALL, xfer, raw.data()) < 0) {
    problem(prefix + name, "cannot be read");
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (char* s : raw) {
    out.emplace_back(s ? s : "");
    if (s) H5free_memory(s);
  }
  return out;
}

namespace {

// A member of a table that is wanted: where it is and what it is.
struct Wanted {
  const Column* column;
  hid_t native;    // of the column's values
  unsigned index;  // in the file's table
  size_t offset;   // in a row read
};

// Which members are wanted, where they are and what they are; the others a problem each.
std::vector<Wanted> wanted_members(Reader& in, hid_t type, const std::string& at,
                                   const std::vector<Column>& columns) {
  std::vector<Wanted> wanted;
  for (const Column& c : columns) {
    int index = H5Tget_member_index(type, c.name);
    if (index < 0) {
      in.problem(at + "." + c.name, "is missing");
      continue;
    }
    auto i = static_cast<unsigned>(index);
    H5T_class_t cls = H5Tget_member_class(type, i);
    if (cls != H5T_INTEGER && cls != H5T_FLOAT) {
      in.problem(at + "." + c.name, "is not numeric");
      continue;
    }
    hid_t native =
        std::visit([](auto* out) { return native_type<ValueOf<decltype(out)>>(); }, c.out);
    wanted.push_back({&c, native, i, H5Tget_member_offset(type, i)});
  }
  return wanted;
}

// A wanted member's values out of the rows read (`n` rows of `width` bytes) into its column;
// `plain`: the rows are as stored, else packed rows of the wanted members in their own types.
void take_member(Reader& in, hid_t type, bool plain, const Wanted& w,
                 const std::vector<unsigned char>& rows, size_t width, size_t n,
                 const std::string& at) {
  size_t size = H5Tget_size(w.native);
  Id stored(plain ? H5Tget_member_type(type, w.index) : H5Tcopy(w.native), H5Tclose);
  size_t stored_size = H5Tget_size(stored.get());
  // The column, gathered, then converted in place (room for the larger of the two sizes).
  std::vector<unsigned char> column(n * std::max(size, stored_size));
  for (size_t k = 0; k < n; ++k) {
    std::memcpy(column.data() + k * stored_size, rows.data() + k * width + w.offset, stored_size);
  }
  if (n > 0 && H5Tequal(stored.get(), w.native) <= 0 &&
      H5Tconvert(stored.get(), w.native, n, column.data(), nullptr, H5P_DEFAULT) < 0) {
    in.problem(at + "." + w.column->name, "cannot be read");
    return;
  }
  std::visit(
      [&](auto* out) {
        using T = ValueOf<decltype(out)>;
        std::vector<T> v(n);
        if (n > 0) std::memcpy(v.data(), column.data(), n * sizeof(T));
        *out = std::move(v);
      },
      w.column->out);
}

}  // namespace

void Reader::table(hid_t where, const char* name, const std::vector<Column>& columns) {
  const std::string at = name;
  Id d = open_dataset(where, "", name);
  if (!d.ok()) return;
  Id type(H5Dget_type(d.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_COMPOUND) {
    problem(at, "is not a table (a compound dataset)");
    return;
  }
  std::optional<size_t> n = length(d.get(), type.get(), at);
  if (!n) return;
  std::vector<Wanted> wanted = wanted_members(*this, type.get(), at, columns);
  if (wanted.empty()) return;
  // A table of numbers only (ours) is read as stored, with no conversion of whole rows (HDF5's
  // compound conversion costs more than the read); each column is converted alone where its
  // type is not the one wanted. Otherwise HDF5 converts the wanted members into a packed row.
  bool plain = true;
  for (int k = 0; plain && k < H5Tget_nmembers(type.get()); ++k) {
    H5T_class_t cls = H5Tget_member_class(type.get(), static_cast<unsigned>(k));
    plain = cls == H5T_INTEGER || cls == H5T_FLOAT;
  }
  size_t width = 0;
  if (plain) {
    width = H5Tget_size(type.get());
  } else {
    for (Wanted& w : wanted) {
      w.offset = width;
      width += H5Tget_size(w.native);
    }
  }
  Id mem(plain ? H5Tcopy(type.get()) : H5Tcreate(H5T_COMPOUND, width), H5Tclose);
  for (const Wanted& w : wanted) {
    if (!plain) H5Tinsert(mem.get(), w.column->name, w.offset, w.native);
  }
  std::vector<unsigned char> rows(*n * width);
  if (*n > 0 && H5Dread(d.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()) < 0) {
    problem(at, "cannot be read");
    return;
  }
  for (const Wanted& w : wanted) take_member(*this, type.get(), plain, w, rows, width, *n, at);
}

Id Reader::group(hid_t file, const char* name) {
  Id g(H5Gopen2(file, name, H5P_DEFAULT), H5Gclose);
  if (!g.ok())
    problem(name, H5Lexists(file, name, H5P_DEFAULT) <= 0 ? "is missing" : "is not a group");
  return g;
}

Id Reader::string_type(hid_t file_type) {
  Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem.get(), H5T_VARIABLE);
  H5Tset_cset(mem.get(), H5Tget_cset(file_type));
  return mem;
}

Id Reader::open_attr(hid_t where, const std::string& prefix, const char* name, H5T_class_t want) {
  if (where < 0) return Id(-1, H5Aclose);
  Id a(H5Aopen(where, name, H5P_DEFAULT), H5Aclose);
  if (!a.ok()) {
    problem(prefix + name, H5Aexists(where, name) <= 0 ? "is missing" : "cannot be opened");
    return Id(-1, H5Aclose);
  }
  Id type(H5Aget_type(a.get()), H5Tclose);
  Id space(H5Aget_space(a.get()), H5Sclose);
  if (H5Tget_class(type.get()) != want) {
    problem(prefix + name, want == H5T_STRING    ? "is not a string"
                           : want == H5T_INTEGER ? "is not an integer"
                                                 : "is not a number");
    return Id(-1, H5Aclose);
  }
  if (H5Sget_simple_extent_npoints(space.get()) != 1) {
    problem(prefix + name, "is not a single value");
    return Id(-1, H5Aclose);
  }
  return a;
}

Id Reader::open_dataset(hid_t group, const std::string& prefix, const char* name) {
  if (group < 0) return Id(-1, H5Dclose);
  Id d(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose);
  if (!d.ok()) {
    problem(prefix + name,
            H5Lexists(group, name, H5P_DEFAULT) <= 0 ? "is missing" : "is not a dataset");
  }
  return d;
}

std::optional<size_t> Reader::length(hid_t dataset, hid_t type, const std::string& where) {
  Id space(H5Dget_space(dataset), H5Sclose);
  if (H5Sget_simple_extent_ndims(space.get()) != 1) {
    problem(where, "is not one-dimensional");
    return std::nullopt;
  }
  hsize_t dims[1] = {0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  // Our writer stores every value. A length the file has no bytes for (a damaged or foreign
  // file: HDF5 would make up fill values) must not become a vector of that length.
  size_t element = H5Tget_size(type);
  hsize_t stored = H5Dget_storage_size(dataset);
  if (dims[0] > 0 && (element == 0 || stored / element < dims[0])) {
    problem(where, "declares " + std::to_string(dims[0]) + " values and stores " +
                       std::to_string(element == 0 ? 0 : stored / element));
    return std::nullopt;
  }
  return static_cast<size_t>(dims[0]);
}

}  // namespace sweepbench::h5
