#!/usr/bin/env python3
"""bench-sweep's `tag.style: fairseq2` and `fairseq2-0.8` against fairseq2's own taggers:
generated sweeps of the values fairseq2 users write (learning rates in both
notations, large integers, booleans, nulls, lists, strings with spaces, slashes, dots, letters and
digits of other scripts, combining accents, emoji), each planned with bench-sweep and named by
fairseq2 0.3.0's StandardSweepTagger and 0.8.1's _StandardSweepTagGenerator
(tests/reference/fairseq2_real_tags.py runs them).

The names fairseq2 gives are kept in tests/reference/data/fairseq2-real-tags.json, so the suite
checks bench-sweep without the taggers; with TAGGERS_DIR (scripts/fairseq2-taggers) the taggers
run too, and must give those same names. Then the deliberate refusals: what fairseq2 names and
bench-sweep refuses, each with the reason docs/sweeps.md gives.

With --installed PYTHON (the Python of scripts/fairseq2-venv, where fairseq2 0.8.1 is installed
from PyPI), the 0.8 names are computed by that installation's own generator too.

Usage: check_fairseq2_real.py BENCH_SWEEP [TAGGERS_DIR] [--update] [--installed PYTHON]
  --update  rewrite the stored names from the taggers (TAGGERS_DIR needed)
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "fairseq2-real-tags.json")
sys.path.insert(0, HERE)

NAMES = ["café", "naïve résumé", "a b c", "a/b/d", "x.y.z", "Ünïcödé-ñame", "中文名字", "٣٤",
         "½", "emoji🙂ok", "tab\there", "", "-", "_", "a-b_c", "verylongstringwithmanychars",
         "α" * 15, "α" * 16, "Ⅻ roman", "x²", "cafe\u0301", "ß", "ǅ", "ʰ", "𝔘𝔫𝔦"]
VALUES = ["0.001", "3.0e-4", "1e-5", "1e16", "2.0", "0", "-1", "9223372036854775807", "true",
          "false", "null", "'1e-5'", "[1, 2]", "[a b, '3']"]


def sweep_text(name, style, fmt, command=False):
    keys = ("  keys: [params, name, value, preset]\n" if style == "fairseq2" else "")
    base = ("  benchmark: command\n  command: {argv: [prog]}\n  params: {preset: my_recipe}\n"
            if command else "  model.preset: gpt2-tiny\n")
    return (f"name: {name}\nbase:\n{base}tag:\n  style: {style}\n{keys}"
            + (f"  format: {json.dumps(fmt)}\n" if fmt else "")
            + "axes:\n  params.name: " + json.dumps(NAMES, ensure_ascii=False) + "\n"
            + "  params.value: [" + ", ".join(VALUES) + "]\n")


CASES = {
    # name: (style, format, command point)
    "0.3-default": ("fairseq2", None, False),
    "0.3-named": ("fairseq2", "ps_{preset}.n_{params.name}.ws_{world_size}.{hash}", False),
    "0.3-command": ("fairseq2", "ps_{preset}.n_{params.name}.{hash}", True),
    "0.8-default": ("fairseq2-0.8", None, False),
    "0.8-named": ("fairseq2-0.8", "n_{params.name}.ws_{world_size}.{hash}", False),
    "0.8-command": ("fairseq2-0.8", "n_{params.name}.{hash}", True),
}


def plan(bench_sweep, tmp, name, text, check=0):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    r = subprocess.run([bench_sweep, "plan", path, "--format", "json"], capture_output=True,
                       text=True, encoding="utf-8")
    if r.returncode != check:
        raise AssertionError(f"{name}: bench-sweep plan exit {r.returncode}, wanted {check}\n"
                             f"{r.stderr}")
    if check != 0:
        return r.stderr
    planned = json.loads(r.stdout)
    # Keys added after tag.style fairseq2-0.8 are left out of its names while at their default
    # (docs/sweeps.md): fairseq2 is given the config without them, as it was when the names were
    # kept.
    added = {("launch", "exclusive"): "auto", ("hardware", "assumed_mfu"): None,
             ("hardware", "link_bandwidth_gbs"): None, ("command", "predict_as"): "none",
             ("infer", "cuda_graph"): True, ("train", "loss_chunk_rows"): 0,
             ("metrics", "target_ci"): None, ("metrics", "max_seconds"): 60.0,
             ("train", "gpu_kernels"): False, ("train", "cuda_graph"): False}
    for p in planned["points"]:
        for (section, key), default in added.items():
            values = p["config"].get(section, {})
            if key in values and values[key] == default:
                del values[key]
        # The serve section came whole after the style (issue 54): at its defaults, it is not
        # part of the names at all.
        serve = p["config"].get("serve")
        if serve is not None and p["config"].get("benchmark") != "serve":
            del p["config"]["serve"]
    return planned


def fairseq2_names(taggers, plan_json, style, fmt):
    import fairseq2_real_tags as real
    v03, v08 = taggers
    version = "0.3" if style == "fairseq2" else "0.8"
    return [real.tag(v03, v08, version, p["config"], ["params", "name", "value", "preset"], fmt)
            for p in plan_json["points"]]


def main():
    argv = sys.argv[1:]
    installed = None
    if "--installed" in argv:
        i = argv.index("--installed")
        installed = argv[i + 1]
        del argv[i:i + 2]
    args = [a for a in argv if a != "--update"]
    update = "--update" in argv
    bench_sweep = args[0]
    taggers = None
    if len(args) > 1:
        import fairseq2_real_tags as real
        taggers = real.taggers(args[1])
    stored = {}
    if os.path.exists(DATA):
        with open(DATA, encoding="utf-8") as f:
            stored = json.load(f)
    fresh = {}
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, (style, fmt, command) in CASES.items():
            planned = plan(bench_sweep, tmp, case, sweep_text(case, style, fmt, command))
            ours = [p["tag"] for p in planned["points"]]
            if taggers:
                theirs = fairseq2_names(taggers, planned, style, fmt)
                fresh[case] = theirs
                if not update:
                    stored_case = stored.get(case)
                    if stored_case != theirs:
                        failures.append(f"{case}: the stored names are not what fairseq2 gives "
                                        "now (run with --update?)")
            else:
                theirs = stored.get(case)
                if theirs is None:
                    failures.append(f"{case}: no stored names in {DATA}")
                    continue
            if installed and style == "fairseq2-0.8":
                plan_path = os.path.join(tmp, case + ".plan.json")
                with open(plan_path, "w", encoding="utf-8") as f:
                    json.dump(planned, f, ensure_ascii=False)
                r = subprocess.run([installed, os.path.join(HERE, "fairseq2_real_tags.py"),
                                    "--installed", plan_path, "0.8", ""] + ([fmt] if fmt else []),
                                   capture_output=True, text=True, encoding="utf-8")
                if r.returncode != 0:
                    failures.append(f"{case}: the installed fairseq2 failed: {r.stderr[-2000:]}")
                    continue
                got = r.stdout.splitlines()
                if got != ours:
                    bad = [(i, a, b) for i, (a, b) in enumerate(zip(ours, got)) if a != b]
                    failures.append(f"{case}: {len(bad)} names differ from the installed "
                                    f"fairseq2's, e.g. {bad[:3]}")
                else:
                    print(f"{case}: all {len(ours)} names equal the installed fairseq2 0.8.1's")
            diff = [(i, a, b) for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
            if len(ours) != len(theirs) or diff:
                failures.append(f"{case}: {len(diff)} of {len(ours)} names differ from "
                                f"fairseq2's ({len(theirs)}), e.g. {diff[:3]}")
            else:
                print(f"{case}: all {len(ours)} names equal fairseq2's")

        # The deliberate refusals (docs/sweeps.md): fairseq2 names these; bench-sweep does not.
        refusals = {
            "two points with one name": (
                "fairseq2-0.8", "n_{params.name}", '["a b", "ab"]',
                "two points get the same tag"),
            "an integer beyond 64 bits": (
                "fairseq2-0.8", None, "[18446744073709551616]", "64"),
            "a name starting with '-'": (
                "fairseq2-0.8", "{params.name}.{hash}", '["-0.5"]', "starts with '-'"),
            "a name with '..'": (
                "fairseq2-0.8", "n.{params.name}.{hash}", '["!"]', "contains '..'"),
            "a command point without params.preset under 0.3's rules": (
                "fairseq2", None, '["x"]', "without params.preset"),
        }
        for what, (style, fmt, values, said) in refusals.items():
            command = "preset" in what
            text = (f"name: refused\nbase:\n"
                    + ("  benchmark: command\n  command: {argv: [prog]}\n" if command
                       else "  model.preset: gpt2-tiny\n")
                    + f"tag:\n  style: {style}\n"
                    + ("  keys: [params, name]\n" if style == "fairseq2" else "")
                    + (f"  format: {json.dumps(fmt)}\n" if fmt else "")
                    + f"axes:\n  params.name: {values}\n")
            err = plan(bench_sweep, tmp, "refused", text, check=2)
            if said not in err:
                failures.append(f"refusal of {what}: wanted '{said}' in: {err.strip()}")
            else:
                print(f"refused, as documented: {what}")
    if update:
        if not taggers:
            sys.exit("--update needs TAGGERS_DIR")
        os.makedirs(os.path.dirname(DATA), exist_ok=True)
        with open(DATA + ".partial", "w", encoding="utf-8") as f:
            json.dump(fresh, f, ensure_ascii=False, indent=1)
            f.write("\n")
        os.replace(DATA + ".partial", DATA)
        print(f"wrote {DATA}")
    if failures:
        print("\n".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
