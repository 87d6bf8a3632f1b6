#!/usr/bin/env python3
"""The servers preset's table from a run's results.json, as Markdown.

    scripts/servers-table.py h3lab-results/servers-.../results.json [PROFILE]

One row per server and protocol (the suite's [target.servers] order):
requests per second at 1 KB over 100 connections and at 10 MB over 10,
cold and resumed first byte, the small page's load, and the server's CPU
per 1 KB request and per GB of the 10 MB responses. Each figure is the
median of all the cell's samples over the repetitions; a protocol the
server does not offer reads "not offered", a cell whose server lacks the
feature (a resumed handshake) "not offered", a failed cell "failed".
Then, per protocol, the fastest and the cheapest. What the probe read of
each server's h3 is in `h3lab report`'s line under each row. Only the
standard library: it runs where h3lab's results are copied to.
"""
import json
import statistics
import sys
from collections import defaultdict


def server_of(cell):
    sweep = cell.get("sweep") or {}
    return sweep.get("value") if sweep.get("tunable") == "server" else None


def workload_of(cell):
    return cell["workload"].split(" [")[0]


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    results = json.load(open(sys.argv[1]))
    profile = sys.argv[2] if len(sys.argv) == 3 else "broadband"
    rows = results["suite"]["servers"]
    protocols = results["suite"]["protocols"]
    cells = defaultdict(list)
    for cell in results["cells"]:
        server = server_of(cell)
        if cell["profile"] != profile or server is None:
            continue
        key = (server, cell["protocol"], workload_of(cell), cell.get("mode"))
        cells[key].append(cell)

    def figure(server, proto, workload, mode=None):
        found = cells.get((server, proto, workload, mode), [])
        if not found:
            return None, "not offered"
        statuses = {c["outcome"]["status"] for c in found}
        if "failed" in statuses:
            return None, "failed"
        if statuses == {"not_offered"}:
            return None, "not offered"
        samples = [s for c in found if c.get("metric") for s in c["metric"]["samples"]]
        return (statistics.median(samples), None) if samples else (None, "?")

    def cpu(server, proto, workload, per):
        found = [c for c in cells.get((server, proto, workload, None), [])
                 if c["outcome"]["status"] == "ok" and c.get("cpu")]
        costs = [per(c) for c in found if per(c) is not None]
        return statistics.median(costs) if costs else None

    def server_s(cell):
        # The server's CPU over the measured interval, from /proc; below
        # 50 ms (h3lab_results::bench::SERVER_CPU_RESOLVED_S) it is unknown.
        seconds = cell["cpu"].get("server_interval_s")
        return seconds if seconds is not None and seconds >= 0.05 else None

    def per_request(cell):
        seconds = server_s(cell)
        return seconds / cell["requests"] * 1e6 if seconds and cell.get("requests") else None

    def per_gb(cell):
        seconds = server_s(cell)
        return seconds / (cell["bytes"] / 1e9) if seconds and cell.get("bytes") else None

    def show(value_reason, fmt):
        value, reason = value_reason
        return reason if value is None else fmt(value)

    print("| server (QUIC stack) | proto | RPS 1 KB, 100 conn | RPS 10 MB, 10 conn "
          "| first byte cold | resumed | small page | server CPU per 1 KB request | per GB (10 MB) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    best = defaultdict(list)
    for row in rows:
        name = row["name"]
        stack = row.get("stack") or "none"
        for proto in protocols:
            rps = figure(name, proto, "rps-1KB")
            if rps[1] == "not offered":
                print(f"| {name} ({stack}) | {proto} | not offered | | | | | | |")
                continue
            big = figure(name, proto, "rps-10MB")
            cold = figure(name, proto, "first-byte", "cold")
            resumed = figure(name, proto, "first-byte", "resumed")
            page = figure(name, proto, "page-small")
            request_us = cpu(name, proto, "rps-1KB", per_request)
            gb_s = cpu(name, proto, "rps-10MB", per_gb)
            ms = lambda v: f"{v:.1f} ms"
            print(f"| {name} ({stack}) | {proto} | {show(rps, lambda v: f'{v:.0f}')} "
                  f"| {show(big, lambda v: f'{v:.2f}')} | {show(cold, ms)} | {show(resumed, ms)} "
                  f"| {show(page, lambda v: f'{v:.0f} ms')} "
                  f"| {'?' if request_us is None else f'{request_us:.0f} µs'} "
                  f"| {'?' if gb_s is None else f'{gb_s:.2f} s'} |")
            best[proto].append((name, rps[0], request_us, gb_s))
    print()
    for proto, entries in best.items():
        def top(index, reverse):
            known = [e for e in entries if e[index] is not None]
            if not known:
                return "?"
            name, value = sorted(((e[0], e[index]) for e in known), key=lambda e: e[1], reverse=reverse)[0]
            return f"{name} ({value:.2f})" if index == 3 else f"{name} ({value:.0f})"
        print(f"- {proto}: fastest at 1 KB {top(1, True)} req/s; cheapest per 1 KB request "
              f"{top(2, False)} µs; cheapest per GB {top(3, False)} s")


if __name__ == "__main__":
    main()
