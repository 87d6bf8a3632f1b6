#!/usr/bin/env python3
"""Prints a results.json with what a run measures masked, so that two runs
of one suite can be diffed for what the code decides: the cells and their
labels, the link settings, the outcomes, every record's keys and nesting.

Masked: numbers (except the suite's, the link settings', seeds and
repetitions), histograms, clock times, the per-second timeline (its length
is the run's), and the order of a page load's resources (the order they
finished in). Keys that appear only when a count is above zero (a link's
`bytes_dropped`, a server counter such as `..._aborted_total`) still differ
between runs.

    scripts/results-shape.py A/results.json > a; scripts/results-shape.py B/results.json > b; diff a b
"""
import json
import re
import sys

KEEP_NUMBERS = {"settings", "suite", "repetition", "seed"}


def mask(value, keep=False, key=""):
    if key == "timeline":
        return "<timeline>"
    if isinstance(value, dict):
        return {k: mask(v, keep or k in KEEP_NUMBERS, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [mask(v, keep, key) for v in value]
        if key == "resources":
            items.sort(key=lambda r: json.dumps(r, sort_keys=True))
        return items
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value if keep else "<n>"
    if isinstance(value, str) and value.startswith("HISTF"):
        return "<histogram>"
    if isinstance(value, str) and re.match(r"\d{4}-\d\d-\d\dT", value):
        return "<time>"
    return value


with open(sys.argv[1]) as file:
    print(json.dumps(mask(json.load(file)), indent=1, sort_keys=True))
