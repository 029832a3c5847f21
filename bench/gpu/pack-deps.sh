#!/bin/bash
# Packs what bench-train and bench-infer need from Debian, apart from libtorch, CUDA and NCCL,
# into one archive for a GPU machine that has a CUDA libtorch (a PyTorch wheel) but no Open MPI,
# HDF5, yaml-cpp, Boost or RE2: the lent GPU machines of docs/performance.md. Run it here (Debian 12, deps installed, a
# configured build/release); bench/gpu/run.sh unpacks it there. Paths keep their Debian layout so
# Open MPI relocates with OPAL_PREFIX.
#
#   bench/gpu/pack-deps.sh [OUT.tar.xz]      (default .gpu/deps.tar.xz)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/.gpu/deps.tar.xz}
cc_json=$root/build/release/compile_commands.json
[[ -f $cc_json ]] || { echo "pack-deps: $cc_json missing; configure build/release first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
list=$work/files

# 1. Headers: the Boost headers our sources include (the whole of Boost is 140 MB), and the whole
#    of yaml-cpp's, HDF5's and Open MPI's.
/usr/bin/python3 - "$cc_json" "$work/deps" <<'PY'
import json, shlex, subprocess, sys
entries = json.load(open(sys.argv[1]))
out = open(sys.argv[2], "w")
for e in entries:
    if "/tests/" in e["file"] or "/fuzz/" in e["file"]:
        continue
    args = shlex.split(e["command"])
    keep, skip = [], False
    for a in args:
        if skip: skip = False; continue
        if a in ("-o", "-c"): skip = a == "-o"; continue
        keep.append(a)
    if keep[0].endswith("ccache"): keep = keep[1:]
    deps = subprocess.run(keep + ["-M", "-MF", "/dev/stdout", "-E", "-o", "/dev/null"], cwd=e["directory"],
                          check=True, capture_output=True, text=True).stdout
    out.write(deps.replace("\\\n", " ") + "\n")
PY
tr ' ' '\n' <"$work/deps" | grep '^/usr/include/boost/' | sort -u >"$list"
find /usr/include/yaml-cpp /usr/include/hdf5/serial /usr/lib/x86_64-linux-gnu/openmpi/include \
  /usr/include/re2 /usr/include/postgresql /usr/include/sqlite3.h /usr/include/sqlite3ext.h \
  -type f >>"$list"

# 2. CMake package files and the link-time names.
find /usr/lib/x86_64-linux-gnu/cmake/yaml-cpp /usr/lib/x86_64-linux-gnu/cmake/Boost-1.74.0 \
  /usr/lib/x86_64-linux-gnu/cmake/boost_headers-1.74.0 \
  /usr/lib/x86_64-linux-gnu/cmake/boost_program_options-1.74.0 \
  /usr/lib/x86_64-linux-gnu/cmake/BoostDetectToolset-1.74.0.cmake -type f >>"$list"
for f in /usr/lib/x86_64-linux-gnu/libyaml-cpp.so* /usr/lib/x86_64-linux-gnu/libboost_program_options.so* \
         /usr/lib/x86_64-linux-gnu/libre2.so /usr/lib/x86_64-linux-gnu/libsqlite3.so \
         /usr/lib/x86_64-linux-gnu/libpq.so \
         /usr/lib/x86_64-linux-gnu/hdf5/serial/libhdf5.so /usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so; do
  echo "$f" >>"$list"
done

# 3. Open MPI's runtime: launchers, components, help texts, PMIx and its components.
{ ls /usr/bin/orted /usr/bin/mpirun /usr/bin/mpiexec /usr/bin/orterun /usr/bin/ompi_info 2>/dev/null
  find /usr/lib/x86_64-linux-gnu/openmpi/lib /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi \
    /usr/share/pmix /etc/openmpi -type f 2>/dev/null || true; } >>"$list"

# 4. Shared libraries: everything the above and bench-train's non-torch libraries load, but libc,
#    libstdc++ and libgcc (the target machine's own serve). Base libraries the target most likely
#    has (zlib, OpenSSL, ...) go to a fallback folder that run.sh searches after the system's.
bins=$(grep -E '\.so|/usr/bin/' "$list" | sort -u; echo /usr/lib/x86_64-linux-gnu/libhdf5_serial.so.103 \
       /usr/lib/x86_64-linux-gnu/libyaml-cpp.so.0.7 /usr/lib/x86_64-linux-gnu/libboost_program_options.so.1.74.0)
libs=$work/libs
{ for b in $bins; do ldd "$b" 2>/dev/null | awk '$3 ~ /^\// {print $3}'; done
  for l in libmpi.so.40 libopen-rte.so.40 libopen-pal.so.40 libpmix.so.2 libhdf5_serial.so.103 \
           libyaml-cpp.so.0.7 libboost_program_options.so.1.74.0 libre2.so.9 libsqlite3.so.0 libpq.so.5; do
    echo "/usr/lib/x86_64-linux-gnu/$l"
  done; } | sort -u >"$libs"
mkdir -p "$work/root/usr/lib/sweepbench-primary" "$work/root/usr/lib/sweepbench-fallback"
while read -r l; do
  base=$(basename "$l")
  case $base in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++*|libgcc_s*) continue ;;
    *mpi*|*open-rte*|*open-pal*|*pmix*|*hwloc*|*libevent*|*hdf5*|libsz*|libaec*|*yaml*|*boost*|*mca_common*|libre2*)
      dest=sweepbench-primary ;;
    *) dest=sweepbench-fallback ;;
  esac
  cp -L "$l" "$work/root/usr/lib/$dest/$base"
done <"$libs"

# Copy the listed files with their paths, links resolved to files.
sort -u "$list" | while read -r f; do
  mkdir -p "$work/root$(dirname "$f")"
  cp -L "$f" "$work/root$f"
done
# RE2, SQLite and libpq (the history store's) are found through pkg-config: their .pc files,
# relative to where they are unpacked.
pc=$work/root/usr/lib/x86_64-linux-gnu/pkgconfig
mkdir -p "$pc"
sed -e 's|^includedir=.*|includedir=${pcfiledir}/../../../include|' \
    -e 's|^libdir=.*|libdir=${pcfiledir}/..|' /usr/lib/x86_64-linux-gnu/pkgconfig/re2.pc >"$pc/re2.pc"
for name in sqlite3 libpq; do
  sed -e 's|^prefix=/usr$|prefix=${pcfiledir}/../../..|' \
    "/usr/lib/x86_64-linux-gnu/pkgconfig/$name.pc" >"$pc/$name.pc"
done
mkdir -p "$(dirname "$out")"
tar -C "$work/root" -cJf "$out.tmp" .
mv "$out.tmp" "$out"
echo "pack-deps: $out ($(du -h "$out" | cut -f1), $(find "$work/root" -type f | wc -l) files)"
