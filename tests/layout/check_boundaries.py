#!/usr/bin/env python3
"""The design card's layout, checked (docs/architecture.md).

Each folder is one CMake target whose link line is its contract. This check fails when

  * a source file includes a header of a module its target may not use (postprocess/ including
    launch/, launch/ including results/, anything but src/train including torch or MPI, ...), or
  * a target links one of our libraries (target_link_libraries in src/, launch/, postprocess/)
    that its contract does not allow, or that no file of it uses (no header of it included), or
  * a built binary links a library its contract forbids (bench-sweep: torch, MPI, HDF5;
    bench-extract: torch, MPI; bench-plot: torch, MPI, HDF5), or contains code of the runner.

    check_boundaries.py --source DIR [--bin DIR --build DIR]   check the tree (and the binaries)
    check_boundaries.py --source DIR --self-test [--bin DIR --build DIR]
                                                                plant crossings in a copy of the
                                                                tree; each must be caught
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Module -> the modules whose headers it may include. A module is a folder (src/config/parsers/ is
# config's), or one of the finer groups of postprocess/ below (the plot side must stay HDF5-free).
# The ground floor is three rooms: text (nothing of ours below it), os and config (each on text
# only); metrics stands alone; predict reads configs, the machine and metrics.
FLOOR = {"text", "os", "config"}
ALLOWED = {
    "text": {"text"},
    "os": {"text", "os"},
    "config": {"text", "config"},
    "metrics": {"metrics"},
    "predict": FLOOR | {"metrics", "predict"},
    "layout": FLOOR | {"layout"},
    "sweep": FLOOR | {"layout", "metrics", "predict", "sweep"},
    "results": FLOOR | {"layout", "metrics", "results"},
    # The model and its device (libtorch); the programs' shared run (MPI) on it; training and
    # generation each on both, neither on the other.
    "model": FLOOR | {"model"},
    "run": FLOOR | {"layout", "metrics", "results", "model", "run"},
    "train": FLOOR | {"layout", "metrics", "results", "model", "run", "train"},
    "infer": FLOOR | {"layout", "metrics", "results", "model", "run", "infer"},
    "command": FLOOR | {"layout", "metrics", "results", "command"},
    # The serve workload (issue 54): percentiles and means from metrics; bench-serve writes its
    # results as every workload does (layout's names, results' rank file).
    "serve": FLOOR | {"layout", "metrics", "results", "serve"},
    "launch": FLOOR | {"layout", "sweep", "launch"},
    "tool": FLOOR | {"tool"},
    "plot": FLOOR | {"metrics", "tool", "plot"},
    "extract": FLOOR | {"layout", "sweep", "metrics", "predict", "results", "tool", "extract"},
    "report": FLOOR | {"layout", "sweep", "metrics", "results", "tool", "extract", "report"},
    "history": FLOOR | {"layout", "sweep", "metrics", "results", "tool", "extract", "report",
                        "history"},
}
# System headers by the dependency they bring, and the modules that may include them.
SYSTEM = [
    (re.compile(r"^(torch|ATen|c10|caffe2)/"), "libtorch", {"model", "train", "infer"}),
    (re.compile(r"^(mpi\.h|mpi_)"), "MPI", {"run", "train", "infer"}),
    (re.compile(r"^(hdf5\.h|H5[A-Za-z]*\.h)"), "HDF5", {"results"}),
    (re.compile(r"^(cuda|cublas|nccl)"), "CUDA", {"model", "train", "infer"}),
    (re.compile(r"^nlohmann/"), "nlohmann_json", {"command", "history"}),
    (re.compile(r"^sqlite3\.h"), "SQLite", {"history"}),
    (re.compile(r"^libpq-fe\.h"), "libpq", {"history"}),
    (re.compile(r"^curl/"), "libcurl", {"history", "serve"}),
    (re.compile(r"^openssl/"), "OpenSSL", {"text"}),
]
# Libraries a binary may not need (readelf -d), by binary.
FORBIDDEN_LIBS = {
    "bench-sweep": ["libtorch", "libc10", "libmpi", "libhdf5", "libsqlite3", "libpq", "libcurl"],
    "bench-extract": ["libtorch", "libc10", "libmpi", "libsqlite3", "libpq", "libcurl"],
    "bench-compare": ["libtorch", "libc10", "libmpi", "libsqlite3", "libpq", "libcurl"],
    "bench-plot": ["libtorch", "libc10", "libmpi", "libhdf5", "libsqlite3", "libpq", "libcurl"],
    "bench-command": ["libtorch", "libc10", "libmpi", "libsqlite3", "libpq", "libcurl"],
    "bench-serve": ["libtorch", "libc10", "libmpi", "libsqlite3", "libpq"],
    "bench-history": ["libtorch", "libc10", "libmpi"],
    "bench-report": ["libtorch", "libc10", "libmpi", "libsqlite3", "libpq", "libcurl"],
}
# Static libraries whose code a binary may not contain, by binary.
FORBIDDEN_CODE = {
    "bench-extract": ["launch/libsweepbench_launch.a"],
    "bench-compare": ["launch/libsweepbench_launch.a"],
    "bench-plot": ["launch/libsweepbench_launch.a", "src/libsweepbench_results.a"],
}


def module_of_file(rel):
    """The module a file belongs to (by path relative to the repository), or None."""
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1] if parts[1] in ALLOWED else None
    if parts[0] == "launch":
        return "launch"
    if parts[0] == "postprocess":
        name = parts[-1]
        if name.startswith("tool_main."):
            return "tool"
        if name.startswith(("plot.", "plot_", "bench_plot_main.")):
            return "plot"
        if name.startswith(("history_", "bench_history_main.")):
            return "history"
        if name.startswith(("report_", "bench_report_main.")):
            return "report"
        return "extract"
    return None


def module_of_include(header):
    """The module of a quoted include such as "layout/paths.h", or None for others."""
    parts = header.split("/")
    if parts[:2] == ["config", "parsers"] and len(parts) == 3:
        return "config"
    if len(parts) != 2:
        return None
    folder, name = parts
    if folder == "postprocess":
        if name.startswith("tool_main."):
            return "tool"
        if name.startswith("history_"):
            return "history"
        if name.startswith("report_"):
            return "report"
        return "plot" if name.startswith(("plot.", "plot_")) else "extract"
    return folder if folder in ALLOWED else None


INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def include_problems(source):
    problems = []
    for top in ("src", "launch", "postprocess"):
        for dirpath, _, files in os.walk(os.path.join(source, top)):
            for f in sorted(files):
                if not f.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, source)
                module = module_of_file(rel)
                if module is None:
                    continue
                with open(path, encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        kind, header = m.groups()
                        if kind == '"':
                            target = module_of_include(header)
                            if target is not None and target not in ALLOWED[module]:
                                problems.append(
                                    f"{rel}:{n}: includes \"{header}\": {module} may not use "
                                    f"{target} (it may use {', '.join(sorted(ALLOWED[module]))})")
                        else:
                            for pattern, what, who in SYSTEM:
                                if pattern.match(header) and module not in who:
                                    problems.append(f"{rel}:{n}: includes <{header}>: {module} "
                                                    f"may not depend on {what}")
    return problems


LINK = re.compile(r"target_link_libraries\(\s*([A-Za-z0-9_:-]+)([^)]*)\)", re.S)
OUR_LIB = re.compile(r"\bsweepbench(?:::|_)([a-z]+)\b")


def included_modules(source):
    """Module -> the other modules whose headers its files include."""
    used = {m: set() for m in ALLOWED}
    for top in ("src", "launch", "postprocess"):
        for dirpath, _, files in os.walk(os.path.join(source, top)):
            for f in files:
                if not f.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, f)
                module = module_of_file(os.path.relpath(path, source))
                if module is None:
                    continue
                with open(path, encoding="utf-8") as fh:
                    for line in fh:
                        m = INCLUDE.match(line)
                        if m and m.group(1) == '"':
                            target = module_of_include(m.group(2))
                            if target is not None and target != module:
                                used[module].add(target)
    return used


def link_problems(source):
    """Our libraries each target links: allowed by its contract, and used by its files."""
    problems = []
    used = included_modules(source)
    for top in ("src", "launch", "postprocess"):
        path = os.path.join(source, top, "CMakeLists.txt")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        for m in LINK.finditer(text):
            lib = OUR_LIB.fullmatch(m.group(1))
            module = lib.group(1) if lib else None
            if module not in ALLOWED:
                continue  # an executable, or a target that is not a module
            line = text.count("\n", 0, m.start()) + 1
            for linked in OUR_LIB.findall(m.group(2)):
                if linked not in ALLOWED or linked == module:
                    continue  # sweepbench::warnings, sweepbench::torch
                where = f"{top}/CMakeLists.txt:{line}: sweepbench_{module} links sweepbench::{linked}"
                if linked not in ALLOWED[module]:
                    problems.append(f"{where}: {module} may not use {linked}")
                elif linked not in used[module]:
                    problems.append(f"{where}, but no file of {module} includes a header of it: "
                                    "drop the link")
    return problems


def needed_libs(binary):
    out = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out.stdout)


def defined_symbols(path, text_only=True):
    out = subprocess.run(["nm", "--defined-only", "-C", path], capture_output=True, text=True)
    symbols = set()
    for line in out.stdout.splitlines():
        f = line.split(" ", 2)
        if len(f) == 3 and (not text_only or f[1] in "Tt"):
            symbols.add(f[2])
    return symbols


def binary_problems(bin_dir, build_dir):
    problems = []
    for binary, forbidden in FORBIDDEN_LIBS.items():
        path = os.path.join(bin_dir, binary)
        if not os.path.exists(path):
            problems.append(f"{path}: missing (build it first)")
            continue
        for lib in needed_libs(path):
            if any(lib.startswith(f) for f in forbidden):
                problems.append(f"{binary} links {lib}, which its contract forbids")
    if build_dir:
        for binary, archives in FORBIDDEN_CODE.items():
            have = defined_symbols(os.path.join(bin_dir, binary))
            for archive in archives:
                lib = os.path.join(build_dir, archive)
                if not os.path.exists(lib):
                    problems.append(f"{lib}: missing (build it first)")
                    continue
                # Only the library's own functions (in our namespace), not inlined templates or
                # what it shares with everything through headers.
                # GCC's local clones ("[clone .isra.0]") of a header's inline function are made
                # in every unit that calls it, so they name no library.
                own = {s for s in defined_symbols(lib)
                       if s.startswith("sweepbench::") and " [clone " not in s}
                crossed = sorted(own & have)
                if crossed:
                    problems.append(f"{binary} contains code of {archive}: "
                                    f"{', '.join(crossed[:3])}" +
                                    (f" and {len(crossed) - 3} more" if len(crossed) > 3 else ""))
    return problems


def self_test(source, bin_dir=None, build_dir=None):
    """Copies the three folders, plants a crossing of each kind, and checks each is caught; with
    the binaries, checks that contracts they break (bench-sweep holding the runner's code,
    bench-extract linking HDF5) would be caught too."""
    plants = [
        ("postprocess/extract.cc", '#include "launch/runner.h"', "extract may not use launch"),
        ("postprocess/plot.cc", '#include "results/rank_reader.h"', "plot may not use results"),
        ("launch/runner.cc", "#include <hdf5.h>", "launch may not depend on HDF5"),
        ("src/sweep/expand.cc", '#include "launch/shell.h"', "sweep may not use launch"),
        ("src/layout/paths.cc", "#include <torch/torch.h>", "layout may not depend on libtorch"),
    ]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for top in ("src", "launch", "postprocess"):
            shutil.copytree(os.path.join(source, top), os.path.join(tmp, top))
        clean = include_problems(tmp) + link_problems(tmp)
        if clean:
            print("the tree itself crosses a boundary:\n  " + "\n  ".join(clean))
            return False
        for rel, line, expected in plants:
            path = os.path.join(tmp, rel)
            with open(path, encoding="utf-8") as fh:
                original = fh.read()
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(line + "\n" + original)
            found = include_problems(tmp)
            caught = [p for p in found if p.startswith(rel + ":1:") and expected in p]
            print(("caught: " + caught[0]) if caught else f"NOT caught: {line} in {rel}")
            ok = ok and bool(caught) and len(found) == 1
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(original)
        # A link the contract allows but nothing uses.
        path = os.path.join(tmp, "src", "CMakeLists.txt")
        with open(path, encoding="utf-8") as fh:
            original = fh.read()
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("\ntarget_link_libraries(sweepbench_layout PRIVATE sweepbench::sweep)\n")
        found = link_problems(tmp)
        for expected in ("sweepbench_layout links sweepbench::sweep: layout may not use sweep",):
            caught = [p for p in found if expected in p]
            print(("caught: " + caught[0]) if caught else f"NOT caught: {expected}")
            ok = ok and bool(caught)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(original)
        with open(path, "a", encoding="utf-8") as fh:  # infer includes nothing of layout
            fh.write("\ntarget_link_libraries(sweepbench_infer PUBLIC sweepbench::layout)\n")
        found = link_problems(tmp)
        caught = [p for p in found if "sweepbench_infer links sweepbench::layout, but" in p]
        print(("caught: " + caught[0]) if caught else "NOT caught: an unused link")
        ok = ok and len(caught) == 1 and len(found) == 1
    if bin_dir and build_dir:
        global FORBIDDEN_LIBS, FORBIDDEN_CODE
        saved = FORBIDDEN_LIBS, FORBIDDEN_CODE
        FORBIDDEN_LIBS = {"bench-extract": ["libhdf5"]}
        FORBIDDEN_CODE = {"bench-sweep": ["launch/libsweepbench_launch.a"]}
        found = binary_problems(bin_dir, build_dir)
        FORBIDDEN_LIBS, FORBIDDEN_CODE = saved
        for expected in ("bench-extract links libhdf5", "bench-sweep contains code of launch/"):
            caught = [p for p in found if p.startswith(expected)]
            print(("caught: " + caught[0][:120]) if caught else f"NOT caught: {expected}")
            ok = ok and bool(caught)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--bin", help="the build's bin/ folder: check the binaries' libraries too")
    ap.add_argument("--build", help="the build folder: check that no binary holds forbidden code")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return 0 if self_test(a.source, a.bin, a.build) else 1
    problems = include_problems(a.source) + link_problems(a.source)
    if a.bin:
        problems += binary_problems(a.bin, a.build)
    for p in problems:
        print(p)
    if not problems:
        print("no boundary crossed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
