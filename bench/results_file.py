"""Writes a benchmark's results JSON as every result is written: under a temporary name, then
renamed, so that a stopped benchmark never leaves a half-written file in bench/results/."""
import json
import os


def write_results(path, result):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".partial", "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(path + ".partial", path)
