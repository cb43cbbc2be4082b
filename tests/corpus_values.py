"""corpus_values: reading a config as tests/corpus_ref.py resolved it, for
that file and its checks (tests/corpus_setup.py, tests/corpus_rules.py):
dotted lookups, and which values count as integers and as maps.

A value corpus_ref.py could not resolve is {UNRESOLVED: "<its text>"}: it is
no map, so no check reads into it.
"""

UNRESOLVED = "__unresolved__"


def get(d, dotted, default=None):
    for part in dotted.split("."):
        if isinstance(d, dict) and part in d:
            d = d[part]
        else:
            return default
    return d


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_map(v):
    return isinstance(v, dict) and UNRESOLVED not in v
