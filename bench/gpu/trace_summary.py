#!/usr/bin/env python3
"""Where a profiled step's GPU time goes: reads the Kineto traces bench-train writes
(DIR/profile/rank-*.pt.trace.json, metrics.profile_steps) and prints the GPU kernels' time by
kind, the busiest kernels, the ops that launched them (each kernel's CPU op by the trace's
External id, with up to three ops around it: `aten::add_ < (top level)` is an add that no
other op called), and how busy the GPU was over the profiled span.

    bench/gpu/trace_summary.py RUN_DIR [RUN_DIR...] [--top 12] [--json OUT]
"""
import argparse
import collections
import glob
import json
import os
import re

KINDS = [  # first match wins; elementwise kernels are named by their functor (CUDAFunctor_add,
    # direct_copy_kernel_cuda), which comes after templates' own names: match the functors
    ("attention", re.compile(r"flash|fmha|attention", re.I)),
    ("matmul", re.compile(r"gemm|nvjet|xmma|cutlass|cublas", re.I)),
    ("softmax / loss", re.compile(r"softmax|nll_loss|cross_entropy|logsumexp", re.I)),
    ("norm", re.compile(r"layer_norm|layernorm|rms_norm|gammabeta", re.I)),
    ("optimizer", re.compile(r"adam|multi_tensor_apply", re.I)),
    ("copy / cast", re.compile(r"copy_kernel|memcpy|memset|fill_kernel|FillFunctor", re.I)),
    ("reduction", re.compile(r"reduce_kernel", re.I)),
    ("elementwise", re.compile(r"elementwise|vectorized|unrolled", re.I)),
]


def kind(name):
    for k, rx in KINDS:
        if rx.search(name):
            return k
    return "other"


def launching_ops(events):
    """External id -> "op < caller < caller's caller" for the trace's CPU ops, the callers found
    by time containment on the op's own thread."""
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    by_thread = collections.defaultdict(list)
    for e in ops:
        by_thread[e.get("tid")].append(e)
    chain = {}
    for thread_ops in by_thread.values():
        thread_ops.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        stack = []
        for e in thread_ops:
            while stack and stack[-1][0]["ts"] + stack[-1][0].get("dur", 0) <= e["ts"]:
                stack.pop()
            callers = stack[-1][1] if stack else []
            names = [e["name"]] + callers
            stack.append((e, names))
            ext = e.get("args", {}).get("External id")
            if ext is not None and ext not in chain:
                chain[ext] = names
    return {k: " < ".join((v + ["(top level)"])[:4]) for k, v in chain.items()}


def summarize(path, top):
    with open(path) as f:
        events = json.load(f).get("traceEvents", [])
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    if not gpu:
        return {"trace": path, "gpu_events": 0}
    start = min(e["ts"] for e in gpu)
    end = max(e["ts"] + e.get("dur", 0) for e in gpu)
    busy = sum(e.get("dur", 0) for e in gpu)
    by_kind = collections.Counter()
    by_name = collections.Counter()
    by_op = collections.Counter()
    op_of = launching_ops(events)
    for e in gpu:
        by_kind[kind(e["name"])] += e.get("dur", 0)
        by_name[e["name"][:90]] += e.get("dur", 0)
        by_op[op_of.get(e.get("args", {}).get("External id"), "(no CPU op)")] += e.get("dur", 0)
    phases = collections.defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "user_annotation":
            phases[e["name"]] += e.get("dur", 0)
    return {"trace": path, "gpu_events": len(gpu), "span_ms": (end - start) / 1e3, "busy_ms": busy / 1e3,
            "by_kind_ms": {k: v / 1e3 for k, v in by_kind.most_common()},
            "top_kernels_ms": {k: v / 1e3 for k, v in by_name.most_common(top)},
            "top_ops_ms": {k: v / 1e3 for k, v in by_op.most_common(top)},
            "phases_ms": {k: v / 1e3 for k, v in phases.items()}}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("runs", nargs="+")
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--json")
    a = p.parse_args()
    out = []
    for run in a.runs:
        for path in sorted(glob.glob(os.path.join(run, "profile", "*.json"))):
            s = summarize(path, a.top)
            out.append(s)
            if not s["gpu_events"]:
                print(f"{path}: no GPU events")
                continue
            print(f"== {os.path.basename(run)}: GPU busy {s['busy_ms']:.1f} of {s['span_ms']:.1f} ms "
                  f"({100 * s['busy_ms'] / s['span_ms']:.0f}%)")
            print("   " + ", ".join(f"{k} {v:.1f}" for k, v in s["by_kind_ms"].items()))
            print("   phases: " + ", ".join(f"{k} {v:.1f}" for k, v in s["phases_ms"].items()))
            for name, ms in list(s["top_kernels_ms"].items())[:6]:
                print(f"   {ms:7.2f} ms  {name}")
            print("   by the op that launched them:")
            for name, ms in list(s["top_ops_ms"].items())[:8]:
                print(f"   {ms:7.2f} ms  {name}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
