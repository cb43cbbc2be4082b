#!/usr/bin/python3
"""Rewrites README.md's command blocks from what gtplan prints.

usage: readme_blocks.py GTPLAN README OUT

A block is a fenced ``` block right after a line
    <!-- docs.sh: CMD && CMD ... -->
Each CMD (a `gtplan ...` or `build/gtplan ...` command line, split as the
shell splits words) is run from the repository root with GTPLAN in its
place, NO_COLOR set and stderr with stdout (or, for a CMD that ends in
2>/dev/null, dropped); the block becomes
"$ CMD" and its output, for each. OUT gets the rewritten README.
"""
import os
import re
import shlex
import subprocess
import sys

MARK = re.compile(r"^<!-- docs.sh: (.*) -->\n```\n(?:.*\n)*?```\n", re.M)


def run(gtplan, cmd):
    words = shlex.split(cmd)
    quiet = words[-1] == "2>/dev/null"  # stdout only
    assert words[0] in ("gtplan", "build/gtplan"), cmd
    env = dict(os.environ, NO_COLOR="1")
    env.pop("FORCE_COLOR", None)
    p = subprocess.run([gtplan] + words[1:len(words) - quiet],
                       stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL if quiet else subprocess.STDOUT,
                       env=env, check=False)
    return "$ " + cmd + "\n" + p.stdout.decode()


def main(argv):
    gtplan, readme, out = argv[1:4]
    text = open(readme, encoding="utf-8").read()

    def block(m):
        body = "".join(run(gtplan, c.strip()) for c in m.group(1).split(" && "))
        return "<!-- docs.sh: %s -->\n```\n%s```\n" % (m.group(1), body)

    text, n = MARK.subn(block, text)
    if n == 0:
        print("readme_blocks: no marked block in " + readme, file=sys.stderr)
        return 2
    open(out, "w", encoding="utf-8").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
