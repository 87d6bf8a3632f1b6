#!/usr/bin/env python3
"""The conformance table of a `h3lab bench --preset conformance` run as
markdown, cases as rows and servers as columns, for docs and notes (the
report page draws the same table; `h3lab report` prints each server's
failures). A server whose cell gave no report (not installed, no h3) has
no column; it is listed under the table with why.

    scripts/conformance-table.py results/conformance-*/results.json
"""
import json
import sys


def main(path):
    with open(path) as f:
        results = json.load(f)
    servers, cases, cells = [], [], {}
    for cell in results["cells"]:
        if cell["kind"] != "conformance":
            continue
        server = (cell.get("sweep") or {}).get("value", "server")
        if server not in servers:
            servers.append(server)
        report = cell.get("client_report") or {}
        if cell["outcome"]["status"] != "ok" or not report:
            why = cell["outcome"].get("error", cell["outcome"]["status"])
            cells[(server, None)] = "no report: " + why.split("did not start: ")[-1]
            continue
        for case in report["cases"]:
            if case["id"] not in cases:
                cases.append(case["id"])
            cells.setdefault((server, case["id"]), []).append(case)
    if not servers:
        sys.exit(f"{path}: no conformance cells; run `h3lab bench --preset conformance`")
    missing = [server for server in servers if (server, None) in cells]
    servers = [server for server in servers if server not in missing]
    print("| case | " + " | ".join(servers) + " |")
    print("| --- |" + " --- |" * len(servers))
    failed = [failures(cells, server, cases) for server in servers]
    print("| failed | " + " | ".join(failed) + " |")
    for case in cases:
        row = [verdict(cells.get((server, case))) for server in servers]
        print(f"| `{case}` | " + " | ".join(row) + " |")
    if missing:
        print()
        for server in missing:
            print(f"- {server}: {cells[(server, None)]}")


def failures(cells, server, cases):
    runs = [cells.get((server, case), []) for case in cases]
    failed = sum(any(c["verdict"] == "fail" for c in run) for run in runs)
    return f"{failed} of {len(cases)}"


def verdict(runs):
    if not runs:
        return "-"
    verdicts = {run["verdict"] for run in runs}
    failing = [run for run in runs if run["verdict"] == "fail"]
    if not failing:
        return "pass" if "pass" in verdicts else "?"
    observed = describe(failing[0]["observed"])
    if "pass" in verdicts:
        return f"**FAIL** {len(failing)} of {len(runs)}: {observed}"
    return f"**FAIL**: {observed}"


def describe(observed):
    kind = observed["kind"]
    if kind == "connection_closed":
        return observed["error"]["name"]
    if kind == "stream_reset":
        return "reset " + observed["error"]["name"]
    if kind == "answered":
        return f"answered {observed['status']}"
    return kind.replace("_", " ")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
