#!/usr/bin/env python3
"""Writes the table of scipy.stats.mannwhitneyu results that tests/results/significance_test.cc
checks mann_whitney_u against (kScipy): samples drawn with a fixed seed, each case's U and
p-value from SciPy's defaults. Run it in a venv with numpy and scipy and paste its output into
the test when the cases change:

    python3 -m venv /tmp/sv && /tmp/sv/bin/pip install numpy scipy
    /tmp/sv/bin/python tests/results/scipy_u_cases.py
"""
import numpy as np
import scipy
import scipy.stats as st

rng = np.random.default_rng(42)
# Exact p-values (a sample of at most 8, no ties), the normal approximation with ties (integer
# samples) and without, lopsided sizes, single values.
SPECS = [(3, 5, "f"), (5, 5, "f"), (8, 8, "f"), (4, 12, "f"), (8, 30, "f"), (9, 9, "f"),
         (20, 25, "f"), (6, 6, "i"), (10, 14, "i"), (3, 40, "f"), (1, 1, "f"), (2, 3, "f")]

print("// scipy", scipy.__version__)
for n1, n2, kind in SPECS:
    if kind == "f":
        a = np.round(rng.normal(10, 1, n1), 4)
        b = np.round(rng.normal(10.6, 1, n2), 4)
    else:
        a = rng.integers(0, 6, n1).astype(float)
        b = rng.integers(1, 7, n2).astype(float)
    r = st.mannwhitneyu(a, b)
    fa = ", ".join(repr(float(x)) for x in a)
    fb = ", ".join(repr(float(x)) for x in b)
    print("    {{%s}, {%s}, %r, %r}," % (fa, fb, float(r.statistic), float(r.pvalue)))
