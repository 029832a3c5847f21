#!/usr/bin/env python3
"""fairseq2's own sweep taggers, run on the points bench-sweep plans: the reference for
`tag.style: fairseq2` (fairseq2 0.3.0's StandardSweepTagger) and `tag.style: fairseq2-0.8`
(fairseq2 0.8.1's _StandardSweepTagGenerator), from the wheels scripts/fairseq2-taggers fetched.

The tagger modules are fairseq2's code as released, loaded from their files. What they import
from the rest of fairseq2 (an EMPTY marker, exception classes, the config section and world info
that 0.8's generator reads two fields of) and typing_extensions' `override` decorator are stood
in for here: importing the real package needs torch 2.9.1, and none of those imports takes part
in the naming.

With --installed (run by the Python of a venv where fairseq2 0.8.1 is installed,
scripts/fairseq2-venv), 0.8's generator is imported from that installation as it is, nothing
stood in for but the config holder and world info it is constructed with.

Usage: fairseq2_real_tags.py TAGGERS_DIR PLAN.json 0.3|0.8 KEYS [FORMAT]
       fairseq2_real_tags.py --installed PLAN.json 0.8 KEYS [FORMAT]
  TAGGERS_DIR  what scripts/fairseq2-taggers prints
  PLAN.json    the output of `bench-sweep plan --format json`
  KEYS         0.3's allowed keys, comma-separated (ignored for 0.8)
Prints one tag per point, in plan order (".r<k>" appended when the plan repeats, as bench-sweep
does).
"""
import importlib.util
import json
import os
import sys
import types


def stub(name, **attrs):
    module = sys.modules.get(name) or types.ModuleType(name)
    for k, v in attrs.items():
        setattr(module, k, v)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(stub(parent), child, module)
    return module


class _Error(Exception):
    def __init__(self, *args, **kwargs):
        super().__init__(*args)


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def taggers(root):
    stub("typing_extensions", override=lambda f: f)
    stub("fairseq2.utils.dataclass", EMPTY=object())
    stub("fairseq2.utils.structured", StructureError=_Error, ValueConverter=object)
    stub("fairseq2.utils.validation", ValidationError=_Error)
    stub("fairseq2.error", InternalError=_Error)
    stub("fairseq2.recipe.config", CommonSection=object)
    stub("fairseq2.recipe.internal.config", _RecipeConfigHolder=object)
    stub("fairseq2.world_info", WorldInfo=object)
    v03 = load(os.path.join(root, "fairseq2-0.3.0", "fairseq2", "recipes", "utils",
                            "sweep_tagger.py"), "fairseq2_v03_sweep_tagger")
    v08 = load(os.path.join(root, "fairseq2-0.8.1", "fairseq2", "recipe", "internal",
                            "sweep_tag.py"), "fairseq2_v08_sweep_tag")
    return v03, v08


def preset_of(config):
    # As bench-sweep decides (docs/sweeps.md): the model preset, or a command point's
    # params.preset.
    if config.get("benchmark") == "command":
        return (config.get("params") or {}).get("preset")
    return config["model"]["preset"]


def tag(v03, v08, version, config, keys, fmt):
    world_size = config["launch"]["ranks"]
    if version == "0.3":
        return v03.StandardSweepTagger(set(keys)).generate(world_size, preset_of(config), config,
                                                           fmt)
    NS = types.SimpleNamespace
    generator = v08._StandardSweepTagGenerator(
        NS(no_sweep_dir=False, sweep_format=fmt or "ws_{world_size}.{hash}"),
        NS(size=world_size), NS(config=config), NS(unstructure=lambda c: c))
    return generator.maybe_generate()


def main():
    root, plan_path, version, keys = sys.argv[1:5]
    fmt = sys.argv[5] if len(sys.argv) > 5 else None
    if root == "--installed":
        from fairseq2.recipe.internal import sweep_tag as installed
        v03, v08 = None, installed
    else:
        v03, v08 = taggers(root)
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    repeats = any(p["repeat"] > 0 for p in plan["points"])
    for p in plan["points"]:
        t = tag(v03, v08, version, p["config"], [k for k in keys.split(",") if k], fmt)
        print(t + (f".r{p['repeat']}" if repeats else ""))


if __name__ == "__main__":
    main()
