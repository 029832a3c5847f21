#include "fuzz/rank_fuzz_entry.h"

#include <hdf5.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "postprocess/reader_pool.h"
#include "postprocess/table_writer.h"
#include "results/rank_file.h"
#include "results/rank_reader.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void invariant_broken(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what.c_str());
  std::abort();
}

// The input, read a little at a time; zeros once it runs out.
class Bytes {
 public:
  Bytes(const std::uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool empty() const { return n_ == 0; }
  std::uint8_t byte() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  void fill(void* out, size_t size) {
    auto* o = static_cast<std::uint8_t*>(out);
    for (size_t i = 0; i < size; ++i) o[i] = byte();
  }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    fill(&v, sizeof v);
    return v;
  }

 private:
  const std::uint8_t* p_;
  size_t n_;
};

// Every object of the layout (docs/results-format.md): where it hangs and what it is. In schema
// 2 /steps is a table (a compound dataset) of members; in schema 1 it was a group of datasets.
enum class Kind { kAttr, kDataset, kGroup, kTable, kMember };
struct Object {
  const char* parent;  // "/" or a group
  const char* name;
  Kind kind;
};
const Object kObjects[] = {
    {"/", "schema_version", Kind::kAttr},
    {"/", "config_yaml", Kind::kAttr},
    {"/", "config_hash", Kind::kAttr},
    {"/", "tag", Kind::kAttr},
    {"/", "rank", Kind::kAttr},
    {"/", "world_size", Kind::kAttr},
    {"/", "local_rank", Kind::kAttr},
    {"/", "hostname", Kind::kAttr},
    {"/", "device_type", Kind::kAttr},
    {"/", "device_name", Kind::kAttr},
    {"/", "device_count", Kind::kAttr},
    {"/", "threads", Kind::kAttr},
    {"/", "torch_version", Kind::kAttr},
    {"/", "container_env_kept", Kind::kAttr},
    {"/", "start_time", Kind::kAttr},
    {"/", "status", Kind::kAttr},
    {"/", "reason", Kind::kAttr},
    {"/", "rank_status", Kind::kAttr},
    {"/", "parameter_count", Kind::kAttr},
    {"/", "flops_per_token", Kind::kAttr},
    {"/", "flops_per_token_6n", Kind::kAttr},
    {"/", "peak_tflops", Kind::kAttr},
    {"/", "steps_planned", Kind::kAttr},
    {"/", "warmup_steps", Kind::kAttr},
    {"/", "seq_len", Kind::kAttr},
    {"/", "micro_batch", Kind::kAttr},
    {"/", "grad_accum", Kind::kAttr},
    {"/", "steps", Kind::kTable},
    {"steps", "step", Kind::kMember},
    {"steps", "total_s", Kind::kMember},
    {"steps", "data_s", Kind::kMember},
    {"steps", "forward_s", Kind::kMember},
    {"steps", "backward_s", Kind::kMember},
    {"steps", "comm_s", Kind::kMember},
    {"steps", "optimizer_s", Kind::kMember},
    {"steps", "tokens", Kind::kMember},
    {"steps", "samples", Kind::kMember},
    {"steps", "loss", Kind::kMember},
    {"steps", "lr", Kind::kMember},
    {"steps", "grad_norm", Kind::kMember},
    {"steps", "loss_scale", Kind::kMember},
    {"steps", "skipped", Kind::kMember},
    {"steps", "measured", Kind::kMember},
    {"/", "eval", Kind::kGroup},
    {"eval", "ran", Kind::kAttr},
    {"eval", "steps", Kind::kAttr},
    {"eval", "samples", Kind::kAttr},
    {"eval", "tokens", Kind::kAttr},
    {"eval", "loss", Kind::kAttr},
    {"eval", "seconds", Kind::kAttr},
    {"eval", "batch_loss", Kind::kDataset},
    {"eval", "batch_s", Kind::kDataset},
    {"/", "memory", Kind::kGroup},
    {"memory", "stage_source", Kind::kAttr},
    {"memory", "stage", Kind::kDataset},
    {"memory", "begin_bytes", Kind::kDataset},
    {"memory", "end_bytes", Kind::kDataset},
    {"memory", "peak_bytes", Kind::kDataset},
    {"memory", "alloc_end_bytes", Kind::kDataset},
    {"memory", "alloc_peak_bytes", Kind::kDataset},
    {"/", "samples", Kind::kGroup},
    {"samples", "device_source", Kind::kAttr},
    {"samples", "time_s", Kind::kDataset},
    {"samples", "device_bytes", Kind::kDataset},
    {"samples", "rss_bytes", Kind::kDataset},
    {"samples", "cpu_percent", Kind::kDataset},
    {"samples", "ram_used_mb", Kind::kDataset},
};
constexpr size_t kObjectCount = sizeof(kObjects) / sizeof(kObjects[0]);

// A plausible run of `steps` steps on rank `rank` of `world`.
RankResult base_result(std::int64_t rank, std::int64_t world, size_t steps, size_t warmup,
                       bool eval, bool nvml) {
  RankResult r;
  r.config_yaml = "model:\n  preset: gpt2-tiny\ntrain:\n  micro_batch: 2\n";
  r.config_hash = "0123456789abcdef";
  r.tag = "point";
  r.rank = rank;
  r.world_size = world;
  r.hostname = "node1";
  r.device_type = nvml ? "cuda" : "cpu";
  r.device_name = nvml ? "NVIDIA H100" : "cpu";
  r.device_count = 1;
  r.threads = 2;
  r.status = "ok";
  r.parameter_count = 1000;
  r.flops_per_token = 6000;
  r.flops_per_token_6n = 5000;
  r.peak_tflops = nvml ? 989 : 0;
  r.steps_planned = static_cast<std::int64_t>(steps);
  r.warmup_steps = static_cast<std::int64_t>(warmup);
  r.seq_len = 64;
  r.micro_batch = 2;
  r.grad_accum = 1;
  for (size_t k = 0; k < steps; ++k) {
    StepRecord s;
    s.step = static_cast<std::int64_t>(k);
    s.total_s = 0.5 + 0.01 * static_cast<double>(k + static_cast<size_t>(rank));
    s.data_s = 0.01;
    s.forward_s = 0.2;
    s.backward_s = 0.25;
    s.comm_s = 0.02;
    s.optimizer_s = 0.02;
    s.tokens = 128;
    s.samples = 2;
    s.loss = 5.0 - 0.1 * static_cast<double>(k);
    s.lr = 1e-3;
    s.grad_norm = 1.5;
    s.measured = k >= warmup;
    r.steps.push_back(s);
  }
  r.eval.ran = eval;
  if (eval) {
    r.eval.steps = 2;
    r.eval.samples = 4;
    r.eval.tokens = 256;
    r.eval.loss = 4.5;
    r.eval.seconds = 0.3;
    r.eval.batch_loss = {4.4, 4.6};
    r.eval.batch_s = {0.15, 0.15};
  }
  r.memory_stage_source = "rss";
  const char* stages[] = {"before_init", "init", "train", "eval"};
  std::int64_t at = 100 << 20;
  for (const char* stage : stages) {
    r.memory_stages.push_back({stage, at, at + (1 << 20), at + (3 << 20)});
    at += 1 << 20;
  }
  r.samples.device_source = nvml ? "nvml" : "rss";
  for (int k = 0; k < 3; ++k) {
    r.samples.time_s.push_back(k);
    r.samples.device_bytes.push_back((200LL + k) << 20);
    r.samples.rss_bytes.push_back((300LL + k) << 20);
    r.samples.cpu_percent.push_back(150.0 + k);
    r.samples.ram_used_mb.push_back(2000.0 + k);
  }
  return r;
}

// One HDF5 type to write with, and its in-memory layout (the same: native little-endian).
hid_t make_type(std::uint8_t choice, size_t fixed_len) {
  switch (choice % 10) {
    case 0:
      return H5Tcopy(H5T_NATIVE_INT64);
    case 1:
      return H5Tcopy(H5T_NATIVE_INT32);
    case 2:
      return H5Tcopy(H5T_NATIVE_UINT64);
    case 3:
      return H5Tcopy(H5T_NATIVE_UINT8);
    case 4:
      return H5Tcopy(H5T_NATIVE_DOUBLE);
    case 5:
      return H5Tcopy(H5T_NATIVE_FLOAT);
    case 6: {
      hid_t t = H5Tcopy(H5T_C_S1);
      H5Tset_size(t, H5T_VARIABLE);
      H5Tset_cset(t, H5T_CSET_UTF8);
      return t;
    }
    case 7: {
      hid_t t = H5Tcopy(H5T_C_S1);
      H5Tset_size(t, fixed_len);
      return t;
    }
    case 8: {
      hid_t t = H5Tcreate(H5T_COMPOUND, 16);
      H5Tinsert(t, "a", 0, H5T_NATIVE_INT64);
      H5Tinsert(t, "b", 8, H5T_NATIVE_DOUBLE);
      return t;
    }
    default: {
      hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
      std::int8_t no = 0, yes = 1;
      H5Tenum_insert(t, "no", &no);
      H5Tenum_insert(t, "yes", &yes);
      return t;
    }
  }
}

// A dataspace: scalar, 1-D (often as long as the steps), empty, 2-D, HDF5's null space, or a
// length no file could store (written with nothing: HDF5 would make up fill values).
hid_t make_space(Bytes& in, size_t steps) {
  std::uint8_t shape = in.byte();
  switch (shape % 7) {
    case 0:
      return H5Screate(H5S_SCALAR);
    case 1: {
      hsize_t n = steps;
      return H5Screate_simple(1, &n, nullptr);
    }
    case 2: {
      hsize_t n = in.byte() % 24;
      return H5Screate_simple(1, &n, nullptr);
    }
    case 3: {
      hsize_t dims[2] = {static_cast<hsize_t>(1 + in.byte() % 3),
                         static_cast<hsize_t>(1 + in.byte() % 3)};
      return H5Screate_simple(2, dims, nullptr);
    }
    case 4:
      return H5Screate(H5S_NULL);
    case 5: {
      hsize_t n = hsize_t{1} << (32 + in.byte() % 24);
      return H5Screate_simple(1, &n, nullptr);
    }
    default: {
      hsize_t n = 0;
      return H5Screate_simple(1, &n, nullptr);
    }
  }
}

// Values for `count` elements of `type`, from the input: any bit pattern.
struct Buffer {
  std::vector<std::uint8_t> bytes;
  std::vector<std::string> strings;  // behind the char* of variable-length strings
  std::vector<const char*> pointers;
  const void* data() const {
    return pointers.empty() ? static_cast<const void*>(bytes.data()) : pointers.data();
  }
};
Buffer make_values(Bytes& in, hid_t type, size_t count) {
  Buffer b;
  if (H5Tis_variable_str(type) > 0) {
    for (size_t i = 0; i < count; ++i) {
      std::string s(in.byte() % 12, '\0');
      in.fill(s.data(), s.size());
      b.strings.push_back(s);
    }
    for (const std::string& s : b.strings) b.pointers.push_back(s.c_str());
    return b;
  }
  b.bytes.resize(std::max<size_t>(1, count * H5Tget_size(type)));
  in.fill(b.bytes.data(), b.bytes.size());
  return b;
}

size_t element_count(hid_t space) {
  hssize_t n = H5Sget_simple_extent_npoints(space);
  return n > 0 ? static_cast<size_t>(n) : 0;
}

// Values are written only where there are few: a huge space stays unwritten.
constexpr size_t kMaxWritten = 4096;

// Deletes what is at parent/name, if anything.
void remove(hid_t parent, const Object& o) {
  if (o.kind == Kind::kAttr) {
    if (H5Aexists(parent, o.name) > 0) H5Adelete(parent, o.name);
  } else if (H5Lexists(parent, o.name, H5P_DEFAULT) > 0) {
    H5Ldelete(parent, o.name, H5P_DEFAULT);
  }
}

// A new attribute or dataset of any type and shape at parent/name.
void create(hid_t parent, const char* name, bool attribute, Bytes& in, size_t steps) {
  std::uint8_t type_choice = in.byte();
  hid_t type = make_type(type_choice, 1 + in.byte() % 16);
  hid_t space = make_space(in, steps);
  size_t n = element_count(space);
  bool write = n > 0 && n <= kMaxWritten;
  Buffer values = make_values(in, type, write ? n : 0);
  if (attribute) {
    hid_t a = H5Acreate2(parent, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) {
      if (write) H5Awrite(a, type, values.data());
      H5Aclose(a);
    }
  } else {
    hid_t d = H5Dcreate2(parent, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (d >= 0) {
      if (write) H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
      H5Dclose(d);
    }
  }
  H5Sclose(space);
  H5Tclose(type);
}

// Overwrites one element of an existing numeric attribute or dataset with any bit pattern of
// its own type: NaN, infinities, negative counts, extremes.
void poke(hid_t parent, const Object& o, Bytes& in) {
  if (o.kind == Kind::kAttr) {
    if (H5Aexists(parent, o.name) <= 0) return;
    hid_t a = H5Aopen(parent, o.name, H5P_DEFAULT);
    hid_t type = H5Aget_type(a);
    H5T_class_t cls = H5Tget_class(type);
    hid_t space = H5Aget_space(a);
    size_t n = element_count(space);
    if ((cls == H5T_INTEGER || cls == H5T_FLOAT) && n > 0) {
      hid_t mem = H5Tget_native_type(type, H5T_DIR_ASCEND);
      Buffer values = make_values(in, mem, n);
      H5Awrite(a, mem, values.data());
      H5Tclose(mem);
    }
    H5Sclose(space);
    H5Tclose(type);
    H5Aclose(a);
    return;
  }
  if (o.kind != Kind::kDataset || H5Lexists(parent, o.name, H5P_DEFAULT) <= 0) return;
  hid_t d = H5Dopen2(parent, o.name, H5P_DEFAULT);
  if (d < 0) return;
  hid_t type = H5Dget_type(d);
  H5T_class_t cls = H5Tget_class(type);
  hid_t space = H5Dget_space(d);
  size_t n = element_count(space);
  if ((cls == H5T_INTEGER || cls == H5T_FLOAT) && n > 0 && n <= kMaxWritten &&
      H5Sget_simple_extent_ndims(space) == 1) {
    hsize_t at = in.byte() % n, one = 1;
    H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, nullptr, &one, nullptr);
    hid_t mem_space = H5Screate_simple(1, &one, nullptr);
    hid_t mem = H5Tget_native_type(type, H5T_DIR_ASCEND);
    Buffer value = make_values(in, mem, 1);
    H5Dwrite(d, mem, mem_space, space, H5P_DEFAULT, value.data());
    H5Tclose(mem);
    H5Sclose(mem_space);
  }
  H5Sclose(space);
  H5Tclose(type);
  H5Dclose(d);
}

// A compound type of one member, for reading or writing that member alone (HDF5 matches
// members by name).
hid_t one_member(const char* name, hid_t type) {
  hid_t t = H5Tcreate(H5T_COMPOUND, H5Tget_size(type));
  H5Tinsert(t, name, 0, type);
  return t;
}

// The table /steps, each member's values as bytes of its own type (nullopt: not a small table).
struct Table {
  struct Member {
    std::string name;
    hid_t type;  // owned
    std::vector<std::uint8_t> values;
  };
  std::vector<Member> members;
  size_t rows = 0;
  ~Table() {
    for (Member& m : members) H5Tclose(m.type);
  }
};
bool read_table(hid_t file, Table* t) {
  if (H5Lexists(file, "steps", H5P_DEFAULT) <= 0) return false;
  hid_t d = H5Dopen2(file, "steps", H5P_DEFAULT);
  if (d < 0) return false;
  hid_t type = H5Dget_type(d), space = H5Dget_space(d);
  bool ok = H5Tget_class(type) == H5T_COMPOUND && H5Sget_simple_extent_ndims(space) == 1 &&
            element_count(space) <= kMaxWritten;
  if (ok) {
    t->rows = element_count(space);
    for (int k = 0; k < H5Tget_nmembers(type); ++k) {
      char* name = H5Tget_member_name(type, static_cast<unsigned>(k));
      hid_t member = H5Tget_member_type(type, static_cast<unsigned>(k));
      // Strings and other classes a fuzz edit made are not carried over: numbers are enough.
      H5T_class_t cls = H5Tget_class(member);
      if (cls == H5T_INTEGER || cls == H5T_FLOAT) {
        Table::Member m{name, H5Tget_native_type(member, H5T_DIR_ASCEND), {}};
        m.values.resize(std::max<size_t>(1, t->rows * H5Tget_size(m.type)));
        hid_t mem = one_member(name, m.type);
        if (t->rows > 0) H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.values.data());
        H5Tclose(mem);
        t->members.push_back(std::move(m));
      }
      H5Tclose(member);
      H5free_memory(name);
    }
  }
  H5Sclose(space);
  H5Tclose(type);
  H5Dclose(d);
  return ok;
}

// Replaces /steps with a table of `t`'s members, then writes member `extra` (any type, values
// from the input) when given.
void write_table(hid_t file, const Table& t, const char* extra, Bytes& in) {
  hid_t extra_type = extra ? make_type(in.byte(), 1 + in.byte() % 16) : -1;
  size_t width = 0;
  for (const Table::Member& m : t.members) width += H5Tget_size(m.type);
  if (extra) width += H5Tget_size(extra_type);
  H5Ldelete(file, "steps", H5P_DEFAULT);
  hid_t type = H5Tcreate(H5T_COMPOUND, std::max<size_t>(1, width));
  size_t offset = 0;
  for (const Table::Member& m : t.members) {
    H5Tinsert(type, m.name.c_str(), offset, m.type);
    offset += H5Tget_size(m.type);
  }
  if (extra) H5Tinsert(type, extra, offset, extra_type);
  hsize_t n = t.rows;
  hid_t space = H5Screate_simple(1, &n, nullptr);
  hid_t d = H5Dcreate2(file, "steps", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (d >= 0 && n > 0) {
    for (const Table::Member& m : t.members) {
      hid_t mem = one_member(m.name.c_str(), m.type);
      H5Dwrite(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.values.data());
      H5Tclose(mem);
    }
    if (extra) {
      Buffer values = make_values(in, extra_type, t.rows);
      hid_t mem = one_member(extra, extra_type);
      H5Dwrite(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
      H5Tclose(mem);
    }
  }
  if (d >= 0) H5Dclose(d);
  H5Sclose(space);
  H5Tclose(type);
  if (extra) H5Tclose(extra_type);
}

// One edit of member `name` of the table: gone (0), another type with any values (1, 2),
// renamed (3), any bit pattern in one row (4, 5).
void edit_member(hid_t file, const char* name, std::uint8_t op, Bytes& in) {
  Table t;
  if (!read_table(file, &t)) return;
  auto it = std::find_if(t.members.begin(), t.members.end(),
                         [&](const Table::Member& m) { return m.name == name; });
  if (it == t.members.end()) return;
  if (op == 4 || op == 5) {
    if (t.rows == 0) return;
    size_t size = H5Tget_size(it->type);
    in.fill(it->values.data() + (in.byte() % t.rows) * size, size);
    write_table(file, t, nullptr, in);
    return;
  }
  Table::Member m = std::move(*it);
  t.members.erase(it);
  if (op == 3) {
    m.name += "_renamed";
    t.members.push_back(std::move(m));
    write_table(file, t, nullptr, in);
  } else {
    H5Tclose(m.type);
    write_table(file, t, op == 0 ? nullptr : name, in);
  }
}

// Rewrites a schema 2 file as schema 1 wrote it: /steps a group of one dataset per column.
void to_schema1(const std::string& path) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  Table t;
  if (file < 0 || !read_table(file, &t)) invariant_broken("cannot rewrite as schema 1: " + path);
  H5Ldelete(file, "steps", H5P_DEFAULT);
  hid_t group = H5Gcreate2(file, "steps", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t n = t.rows;
  hid_t space = H5Screate_simple(1, &n, nullptr);
  for (const Table::Member& m : t.members) {
    hid_t d =
        H5Dcreate2(group, m.name.c_str(), m.type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (n > 0) H5Dwrite(d, m.type, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.values.data());
    H5Dclose(d);
  }
  H5Sclose(space);
  H5Gclose(group);
  std::int64_t one = 1;
  hid_t a = H5Aopen(file, "schema_version", H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_INT64, &one);
  H5Aclose(a);
  H5Fclose(file);
}

// Applies the input's edits to one file; returns how many were tried.
int edit_file(const std::string& path, Bytes& in, size_t steps, bool schema1, size_t* cut_to) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (file < 0) invariant_broken("cannot open the file just written: " + path);
  int edits = 0;
  for (int count = in.byte() % 6; count > 0 && !in.empty(); --count) {
    Object o = kObjects[in.byte() % kObjectCount];
    std::uint8_t op = in.byte();
    ++edits;
    if (o.kind == Kind::kMember && !schema1) {
      edit_member(file, o.name, static_cast<std::uint8_t>(op % 7 == 6 ? 0 : op % 7), in);
      continue;
    }
    // Otherwise the table is one more dataset, and in schema 1 its members were datasets.
    if (o.kind == Kind::kTable) o.kind = schema1 ? Kind::kGroup : Kind::kDataset;
    if (o.kind == Kind::kMember) o.kind = Kind::kDataset;
    hid_t parent = std::strcmp(o.parent, "/") == 0 ? H5Gopen2(file, "/", H5P_DEFAULT)
                                                   : H5Gopen2(file, o.parent, H5P_DEFAULT);
    if (parent < 0) continue;  // an earlier edit replaced the group
    switch (op % 7) {
      case 0:  // gone
        remove(parent, o);
        break;
      case 1:  // another type or shape, same kind
      case 2:
        remove(parent, o);
        create(parent, o.name, o.kind == Kind::kAttr, in, steps);
        break;
      case 3:  // a group where a dataset or attribute was, or a dataset where a group was
        remove(parent, o);
        if (o.kind == Kind::kGroup) {
          create(parent, o.name, false, in, steps);
        } else {
          hid_t g = H5Gcreate2(parent, o.name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
          if (g >= 0) H5Gclose(g);
        }
        break;
      case 4:
      case 5:  // any value in the same type and shape
        poke(parent, o, in);
        break;
      default: {  // something this reader does not know (a newer writer)
        std::string name = std::string("fuzz_extra_") + std::to_string(in.byte() % 4);
        create(parent, name.c_str(), (in.byte() & 1) != 0, in, steps);
        break;
      }
    }
    H5Gclose(parent);
  }
  H5Fclose(file);
  if ((in.byte() % 8) == 0 && !in.empty()) {
    *cut_to = in.u32();
    ++edits;
  }
  return edits;
}

// Overwrites 1 to 8 spans of 1 to 16 bytes of the files, at offsets and with values the input
// gives (all 0xFF half the time: the pattern that crashed HDF5's free list). Returns the spans.
int corrupt_bytes(const std::vector<std::string>& paths, Bytes& in) {
  int spans = 0;
  for (int count = 1 + in.byte() % 8; count > 0; --count) {
    const std::string& path = paths[in.byte() % paths.size()];
    std::uintmax_t size = fs::file_size(path);
    if (size == 0) continue;
    std::uintmax_t at = in.u32() % size;
    size_t length = 1 + in.byte() % 16;
    bool ones = (in.byte() & 1) != 0;
    std::string patch(length, '\xff');
    if (!ones) in.fill(patch.data(), patch.size());
    FILE* f = std::fopen(path.c_str(), "r+b");
    if (f == nullptr) invariant_broken("cannot open the file just written: " + path);
    std::fseek(f, static_cast<long>(at), SEEK_SET);
    std::fwrite(patch.data(), 1, std::min<std::uintmax_t>(length, size - at), f);
    std::fclose(f);
    ++spans;
  }
  return spans;
}

// One directory for the life of the process (never freed: the exit handler still needs it).
const std::string& temp_root() {
  static const std::string* root = [] {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/sweepbench-rankfuzz-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) invariant_broken("mkdtemp failed");
    auto* dir = new std::string(buf.data());
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(temp_root(), ec);
    });
    return dir;
  }();
  return *root;
}

// An unedited file reads back as written.
void check_round_trip(const RankRead& read, const RankResult& want, const std::string& path,
                      RankReadScope scope) {
  if (!read.result || !read.problems.empty()) {
    invariant_broken("an unedited file does not read back: " + path +
                     (read.problems.empty() ? "" : ": " + read.problems.front()));
  }
  const RankResult& got = *read.result;
  bool same = got.status == want.status && got.rank == want.rank &&
              got.world_size == want.world_size && got.steps.size() == want.steps.size() &&
              got.eval.samples == want.eval.samples &&
              got.memory_stages.size() == want.memory_stages.size() &&
              got.samples.cpu_percent == want.samples.cpu_percent;
  // The summary scope reads what the run shares from rank 0 only, and device memory where NVML
  // measured it (rank_reader.h).
  bool lead = scope == RankReadScope::kAll || want.rank == 0;
  if (lead) {
    same = same && got.config_yaml == want.config_yaml && got.seq_len == want.seq_len &&
           got.eval.ran == want.eval.ran;
  }
  if (scope == RankReadScope::kAll || want.samples.device_source == "nvml") {
    same = same && got.samples.device_bytes == want.samples.device_bytes;
  }
  for (size_t k = 0; same && k < want.steps.size(); ++k) {
    const StepRecord& a = got.steps[k];
    const StepRecord& b = want.steps[k];
    same = a.step == b.step && a.total_s == b.total_s && a.forward_s == b.forward_s &&
           a.loss == b.loss && a.measured == b.measured;
  }
  if (same && scope == RankReadScope::kAll) {
    same = got.tag == want.tag && got.hostname == want.hostname &&
           got.samples.time_s == want.samples.time_s;
    for (size_t k = 0; same && k < want.memory_stages.size(); ++k) {
      same = got.memory_stages[k].stage == want.memory_stages[k].stage &&
             got.memory_stages[k].peak == want.memory_stages[k].peak;
    }
  }
  if (!same) invariant_broken("an unedited file reads back different: " + path);
}

}  // namespace

void run_rank_fuzz_input(const std::uint8_t* data, std::size_t size) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // the editor's failed calls are expected
  Bytes in(data, size);
  std::uint8_t head = in.byte();
  std::int64_t world = 1 + (head & 1);
  size_t steps = in.byte() % 6;
  size_t warmup = std::min<size_t>(in.byte() % 3, steps);
  bool eval = (head & 2) != 0, nvml = (head & 4) != 0, schema1 = (head & 8) != 0;
  // Bytes of the finished files overwritten, as a failing disk or a bad copy leaves them. Such
  // bytes crash or hang HDF5 itself (its free lists, its global heap): not ours to fix, but ours
  // to survive. They are read only through bench-extract's reader processes.
  bool bytes = (head & 16) != 0;

  fs::path point = fs::path(temp_root()) / "point";
  std::error_code ec;
  fs::remove_all(point, ec);
  fs::create_directories(point);
  std::vector<RankResult> written;
  std::vector<std::string> paths;
  for (std::int64_t r = 0; r < world; ++r) {
    written.push_back(base_result(r, world, steps, warmup, eval, nvml));
    paths.push_back((point / rank_file_name(r)).string());
    write_rank_file(written.back(), paths.back());
    if (schema1) to_schema1(paths.back());
  }
  int edits = 0;
  for (const std::string& path : paths) {
    size_t cut_to = SIZE_MAX;
    edits += edit_file(path, in, steps, schema1, &cut_to);
    if (cut_to != SIZE_MAX) fs::resize_file(path, cut_to % (fs::file_size(path) + 1));
  }
  if (bytes) edits += corrupt_bytes(paths, in);

  try {
    for (size_t r = 0; r < paths.size() && !bytes; ++r) {
      for (RankReadScope scope : {RankReadScope::kAll, RankReadScope::kSummary}) {
        RankRead read = read_rank_file(paths[r], scope);
        if (edits == 0) check_round_trip(read, written[r], paths[r], scope);
        for (const std::string& problem : read.problems) {
          if (problem.empty()) invariant_broken("a problem without words: " + paths[r]);
        }
      }
    }
    ExtractOptions options;
    options.jobs = 1;
    options.point_timeout_s = 3;  // a looping HDF5 is stopped well inside libFuzzer's -timeout
    ExtractTable table = extract_points({point.string()}, options);
    if (table.rows.size() != 1) invariant_broken("one point, not one row");
    const auto& row = table.rows.front();
    auto status = row.find("status");
    if (status == row.end() || !status->second.is_string())
      invariant_broken("a row without status");
    if (edits == 0 &&
        (status->second.as_string() != "ok" || table.incomplete != 0 || !table.warnings.empty())) {
      invariant_broken("an unedited point extracts as " + status->second.as_string());
    }
    std::ostringstream sink;
    for (TableFormat f : extract_formats()) {
      print_table(table, f, sink);
    }
  } catch (const std::exception& e) {
    invariant_broken(std::string("the reader threw: ") + e.what());
  }
}

}  // namespace sweepbench
