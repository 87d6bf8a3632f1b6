#!/usr/bin/env python3
"""Issue 59's size measures over the workspace's own code: source files over
700 lines (tests included, and without their `#[cfg(test)]` module) and
functions over 80 lines, signature to closing brace.

Usage: python3 scripts/shape.py [--all]   (--all lists every file and function
over the limits; without it, the counts and the five largest of each)

It reads Rust by its braces, skipping strings, characters and comments, which
is exact for this tree's code (rustfmt's layout); vendor/ and target/ are not
ours and are left out.
"""
import re
import sys
from pathlib import Path

FILE_LIMIT = 700
FUNCTION_LIMIT = 80
ROOT = Path(__file__).resolve().parent.parent
FN = re.compile(r"^\s*(?:pub(?:\([a-z:]+\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)")
TESTS = re.compile(r"^\s*#\[cfg\(test\)\]\s*$")


def code_only(text):
    """The text with strings, characters and comments blanked, newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not text[i - 1:i].isalnum():
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + len(hashes) + 2)
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x[0-9a-fA-F]{2}'", text[i:i + 12]):
            m = re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x[0-9a-fA-F]{2}'", text[i:i + 12])
            out.append(" " * len(m.group(0)))
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def block_end(lines, start):
    """The line where the block opened at or after line `start` closes, or
    None for a declaration without a body."""
    depth, opened = 0, False
    for k in range(start, len(lines)):
        for c in lines[k]:
            if c == "{":
                depth, opened = depth + 1, True
            elif c == "}":
                depth -= 1
                if opened and depth == 0:
                    return k
            elif c == ";" and not opened and depth == 0:
                return None
    return None


def measure(path):
    lines = code_only(path.read_text()).split("\n")
    tests_at = next((k for k, line in enumerate(lines) if TESTS.match(line)), None)
    without_tests = len(lines)
    if tests_at is not None:
        end = block_end(lines, tests_at + 1)
        if end is not None and end >= len(lines) - 2:
            without_tests = tests_at
    functions = []
    for k, line in enumerate(lines):
        m = FN.match(line)
        if m and (tests_at is None or k < tests_at):
            end = block_end(lines, k)
            if end is not None:
                functions.append((end - k + 1, m.group(1), k + 1))
    return len(lines), without_tests, functions


def main():
    every = "--all" in sys.argv[1:]
    files, functions = [], []
    for path in sorted(ROOT.glob("crates/*/src/**/*.rs")):
        total, own, fns = measure(path)
        name = path.relative_to(ROOT)
        files.append((total, own, name))
        functions += [(length, f"{name}:{line} {fn}") for length, fn, line in fns]
    long_files = sorted((f for f in files if f[0] > FILE_LIMIT), reverse=True)
    long_own = [f for f in long_files if f[1] > FILE_LIMIT]
    long_fns = sorted((f for f in functions if f[0] > FUNCTION_LIMIT), reverse=True)
    print(f"{len(files)} files, {len(functions)} functions (outside test modules)")
    print(f"files over {FILE_LIMIT} lines: {len(long_files)} with their tests, {len(long_own)} without")
    for total, own, name in long_files if every else long_files[:5]:
        print(f"  {total:5} ({own} without tests) {name}")
    print(f"functions over {FUNCTION_LIMIT} lines: {len(long_fns)}")
    for length, where in long_fns if every else long_fns[:5]:
        print(f"  {length:5} {where}")


if __name__ == "__main__":
    main()
