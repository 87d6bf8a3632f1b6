#!/usr/bin/env python3
"""Find module cycles within each crate under crates/ (docs/architecture.md).

A module names another through `crate::x` and `super::x` paths, in `use`
trees or inline. Cycles are sought among siblings: a module counts as naming
whatever its submodules name, and naming one's own parent or child is
nesting, not a cycle. Test code (`#[cfg(test)]` items and the modules they
declare) is left out: nothing names a test, so it cannot close a cycle, and
counting it would lift a test's use of a fixture onto the module it tests.
Prints every elementary cycle with one place that makes each of its edges;
exit status 1 if there is any, 0 if none.

    python3 scripts/module-cycles.py
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
CHAR_LITERAL = re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]*\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'")
RAW_STRING = re.compile(r'b?r(#*)"')
PATH_START = re.compile(r"\b(crate|super|self)\s*::")
INLINE_MOD = re.compile(rf"\bmod\s+({IDENT})\s*\{{")
TEST_ONLY = re.compile(r"#\[cfg\(test\)\]")
ATTRIBUTE = re.compile(r"\s*#\[[^\]]*\]")
MOD_DECLARATION = re.compile(rf"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+({IDENT})\s*;")


def blank(text):
    """Replaces what keeps its characters, newlines apart."""
    return re.sub(r"[^\n]", " ", text)


def strip(source):
    """The source with comments, strings and char literals blanked out."""
    out = []
    i, n = 0, len(source)
    while i < n:
        if source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
        elif source.startswith("/*", i):
            depth, end = 1, i + 2
            while end < n and depth:
                if source.startswith("/*", end):
                    depth, end = depth + 1, end + 2
                elif source.startswith("*/", end):
                    depth, end = depth - 1, end + 2
                else:
                    end += 1
        elif (raw := RAW_STRING.match(source, i)) and (i == 0 or not re.match(r"\w", source[i - 1])):
            close = source.find('"' + raw.group(1), raw.end())
            end = n if close < 0 else close + 1 + len(raw.group(1))
        elif source[i] == '"':
            end = i + 1
            while end < n and source[end] != '"':
                end += 2 if source[end] == "\\" else 1
            end += 1
        elif source[i] == "'" and (char := CHAR_LITERAL.match(source, i)):
            end = char.end()
        else:
            out.append(source[i])
            i += 1
            continue
        out.append(blank(source[i:end]))
        i = end
    return "".join(out)


def drop_tests(text):
    """Blanks every `#[cfg(test)]` item; returns it and the test modules it declared."""
    declared = []
    while match := TEST_ONLY.search(text):
        end = match.end()
        while attribute := ATTRIBUTE.match(text, end):
            end = attribute.end()
        if declaration := MOD_DECLARATION.match(text, end):
            declared.append(declaration.group(1))
        depth = 0
        while end < len(text):
            if text[end] == ";" and depth == 0:
                break
            if text[end] == "{":
                depth += 1
            elif text[end] == "}":
                depth -= 1
                if depth == 0:
                    break
            end += 1
        text = text[: match.start()] + blank(text[match.start() : end + 1]) + text[end + 1 :]
    return text, declared


def parse_tree(text, i):
    """Parses a use tree (or an inline path) at `i`: (list of paths, end)."""
    segments = []
    while True:
        i = skip_space(text, i)
        if text.startswith("{", i):
            paths, i = [], i + 1
            while True:
                i = skip_space(text, i)
                if text.startswith("}", i):
                    i += 1
                    break
                sub, i = parse_tree(text, i)
                paths += [segments + s for s in sub]
                i = skip_space(text, i)
                if text.startswith(",", i):
                    i += 1
            return paths or [segments], i
        if text.startswith("*", i):
            return [segments], i + 1
        word = re.compile(IDENT).match(text, i)
        if not word:
            return [segments], i
        segments.append(word.group(0))
        i = skip_space(text, word.end())
        if not text.startswith("::", i) or text.startswith("::<", i):
            return [segments], i
        i += 2


def skip_space(text, i):
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def module_of(src, path):
    """The module path (a tuple) of a source file under src/."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("lib", "main", "mod"):
        parts.pop()
    return tuple(parts)


def resolve(segments, here, modules):
    """The deepest known module a path starting in module `here` names."""
    first, rest = segments[0], segments[1:]
    if first == "crate":
        base = ()
    elif first == "self":
        base = here
    else:
        base = here[:-1]
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    target = base
    for name in rest:
        if target + (name,) not in modules:
            break
        target += (name,)
    return target


def sibling_edge(source, target):
    """Lifts an edge to the two siblings under the modules' common parent."""
    common = 0
    while common < min(len(source), len(target)) and source[common] == target[common]:
        common += 1
    if common in (len(source), len(target)):
        return None
    return source[: common + 1], target[: common + 1]


def crate_graph(src):
    """Sibling edges of one crate: {(a, b): "file:line"} for the first reference."""
    texts, tests = {}, set()
    for file in sorted(src.rglob("*.rs")):
        module = module_of(src, file)
        texts[file], declared = drop_tests(strip(file.read_text()))
        tests.update(module + (name,) for name in declared)
    files = [f for f in texts if not any(module_of(src, f)[: len(t)] == t for t in tests)]
    modules = {module_of(src, f) for f in files}
    edges = {}
    for file in files:
        text = texts[file]
        module = module_of(src, file)
        inline = []  # (name, brace depth its body opened at)
        depth, i = 0, 0
        while i < len(text):
            if (m := INLINE_MOD.match(text, i)) and (i == 0 or not re.match(r"\w", text[i - 1])):
                inline.append((m.group(1), depth))
                depth += 1
                i = m.end()
                continue
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if inline and inline[-1][1] == depth:
                    inline.pop()
            elif m := PATH_START.match(text, i):
                if i == 0 or not re.match(r"\w", text[i - 1]):
                    here = module + tuple(name for name, _ in inline)
                    paths, end = parse_tree(text, i)
                    for segments in paths:
                        target = resolve(segments, here, modules)
                        edge = sibling_edge(module, target)
                        if edge and edge not in edges:
                            line = text.count("\n", 0, i) + 1
                            edges[edge] = f"{file.relative_to(ROOT)}:{line}"
                    i = max(end, i + 1)
                    continue
            i += 1
    return edges


def cycles(edges):
    """Every elementary cycle, each once, starting at its least module."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    found = []

    def walk(start, path, on_path):
        for nxt in sorted(graph.get(path[-1], ())):
            if nxt == start:
                found.append(path + [start])
            elif nxt > start and nxt not in on_path:
                on_path.add(nxt)
                walk(start, path + [nxt], on_path)
                on_path.discard(nxt)

    for start in sorted(graph):
        walk(start, [start], {start})
    return found


def name(module):
    return "::".join(module) or "crate"


def main():
    crates = sorted(p for p in (ROOT / "crates").iterdir() if (p / "src").is_dir())
    total = 0
    for crate in crates:
        edges = crate_graph(crate / "src")
        for cycle in cycles(edges):
            total += 1
            print(f"{crate.name}: " + " -> ".join(name(m) for m in cycle))
            for a, b in zip(cycle, cycle[1:]):
                print(f"    {name(a)} -> {name(b)}  ({edges[(a, b)]})")
    if total:
        print(f"{total} module cycles")
        return 1
    print(f"no module cycles in {len(crates)} crates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
