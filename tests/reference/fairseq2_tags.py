#!/usr/bin/env python3
"""Reference for `tag.style: fairseq2`: fairseq2 v0.3's StandardSweepTagger rules, as
docs/sweeps.md states them, written independently in Python so the C++ tagger is checked
against Python's own number formatting and hashing.

Usage: fairseq2_tags.py PLAN.json KEYS [FORMAT]
  PLAN.json  the output of `bench-sweep plan --format json`
  KEYS       comma-separated tag.keys
Prints one tag per point (repeat suffix .r<k> when a point's repeat index is non-zero or the
plan repeats), in plan order.
"""
import hashlib
import json
import re
import sys


def collect(obj, allowed, tags, path):
    if obj is None:
        tags[path] = "none"
    elif isinstance(obj, str):
        kept = re.sub(r"[^-_\w]", "", obj)  # \w: Unicode letters and numbers, as fairseq2's
        tags[path] = hashlib.sha1(kept.encode()).hexdigest()[:8] if len(kept) >= 16 else kept
    elif isinstance(obj, bool):
        tags[path] = "t" if obj else "f"
    elif isinstance(obj, (int, float)):
        tags[path] = f"{obj}"
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            collect(item, allowed, tags, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if key in allowed:
                collect(value, allowed, tags, f"{path}.{key}" if path else key)


def tag_dict(preset, world_size, config, allowed):
    tags = {"preset": preset, "world_size": f"{world_size}"}
    collect(config, allowed, tags, "")
    sha = hashlib.sha1()
    for k, v in sorted(tags.items()):
        sha.update(k.encode())
        sha.update(v.encode())
    tags["hash"] = sha.hexdigest()[:8]
    return tags


def render(fmt, tags):
    return re.sub(r"\{([^{}]+)\}", lambda m: tags[m.group(1)], fmt)


def main():
    plan = json.load(open(sys.argv[1], encoding="utf-8"))
    allowed = set(k for k in sys.argv[2].split(",") if k)
    fmt = sys.argv[3] if len(sys.argv) > 3 else "ps_{preset}.ws_{world_size}.{hash}"
    repeats = any(p["repeat"] > 0 for p in plan["points"])
    for p in plan["points"]:
        cfg = p["config"]
        tags = tag_dict(cfg["model"]["preset"], cfg["launch"]["ranks"], cfg, allowed)
        tag = render(fmt, tags)
        if repeats:
            tag += f".r{p['repeat']}"
        print(tag)


if __name__ == "__main__":
    main()
