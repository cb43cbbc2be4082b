#!/usr/bin/env python3
"""Writes a libFuzzer dictionary for gtplan's config harnesses (make fuzz):
every key the config schema names, its enum values, and the YAML, Hydra
and interpolation tokens the loader reads. Usage:
    scripts/fuzz_dict.py schemas/config.schema.json > config.dict
"""
import json
import sys

TOKENS = [
    "defaults:", "_override_: true", "${", "}", "${oc.env:", "${add:",
    "${mul:", "${div:", "${max:", "${sub:", "${..", "&a", "*a", "<<: *a",
    "!!int", "!!float", "!!str", "!!bool", "!!null", "!!map", "!!seq",
    "!!python/object/apply:", "---", "...", "- ", ": ", "[", "]", "{",
    "\"", "'", "\\0", "\\x00", "~", "null", "true", "on", "0x", "0o", "0b",
    ".inf", ".nan", "1e308", "9223372036854775807", "16777216",
    "16777217", "4611686018427387904", "-1", "0",
]


def walk(node, out):
    if isinstance(node, dict):
        for key, sub in node.get("properties", {}).items():
            out.add(key)
            walk(sub, out)
        for value in node.get("enum", []):
            if isinstance(value, str):
                out.add(value)
        for key, sub in node.items():
            if key in ("items", "additionalProperties"):
                walk(sub, out)
            elif key in ("anyOf", "oneOf", "allOf"):
                for s in sub:
                    walk(s, out)
            elif key == "$defs":
                for s in sub.values():
                    walk(s, out)


def quote(s):
    return '"' + "".join(
        c if 32 <= ord(c) < 127 and c not in '"\\' else "\\x%02x" % ord(c)
        for c in s) + '"'


def main():
    words = set()
    walk(json.load(open(sys.argv[1])), words)
    for w in sorted(words) + TOKENS:
        print(quote(w))


if __name__ == "__main__":
    main()
