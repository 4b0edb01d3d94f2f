#!/usr/bin/env python3
"""Keep a generated section of a markdown document between two marker comments.

    doc_section.py get DOC NAME          print the section NAME of DOC (nothing if absent)
    doc_section.py put DOC NAME [FILE]   replace it (or append it) with FILE's text (stdin if no
                                         FILE; empty text changes nothing)

Markers: `<!-- NAME_BEGIN -->` and `<!-- NAME_END -->`. Every generator of docs/performance.md
writes its own section: scripts/perf-table the one of the CPU kind it runs on (KIND_AVX2 or
KIND_AVX512; KIND_AVX2_CAPPED under VINORT_CPU_ISA=avx2 on AVX-512), scripts/perf-corpus CORPUS, scripts/perf-tool-models TOOLS, scripts/perf-memory
MEMORY, scripts/perf-kernels KERNELS; the other sections are written by hand from the issues'
measurements.
"""

import sys


def markers(name):
    return f"<!-- {name}_BEGIN -->", f"<!-- {name}_END -->"


def get(doc, name):
    begin, end = markers(name)
    if begin not in doc:
        return ""
    return doc.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def put(doc, name, body):
    begin, end = markers(name)
    section = f"{begin}\n{body.strip(chr(10))}\n{end}"
    if begin in doc:
        head, rest = doc.split(begin, 1)
        return head + section + rest.split(end, 1)[1]
    return doc.rstrip("\n") + "\n\n" + section + "\n"


def main(argv):
    if len(argv) < 3 or argv[0] not in ("get", "put"):
        sys.exit(__doc__)
    cmd, path, name = argv[:3]
    doc = open(path).read()
    if cmd == "get":
        text = get(doc, name)
        if text:
            print(text)
        return 0
    body = open(argv[3]).read() if len(argv) > 3 else sys.stdin.read()
    if not body.strip():
        return 0
    open(path, "w").write(put(doc, name, body))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
