#!/usr/bin/python3
"""Validates a gtplan plan JSON against schemas/plan.schema.json (or any
JSON file against a schema: gtplan-run's checkpoint metadata against
schemas/ckpt.schema.json).

usage: check_plan_schema.py SCHEMA PLAN.json
Exit 0 when valid, 1 when invalid (the first errors are printed), 2 on a
usage or read error. Runs with Debian's python3-jsonschema (Draft 2020-12).
"""
import json
import sys

try:
    from jsonschema import Draft202012Validator
except ImportError:  # pragma: no cover - depends on the host
    print("check_plan_schema: python3-jsonschema is not installed "
          "(apt-get install python3-jsonschema)", file=sys.stderr)
    sys.exit(2)

MAX_ERRORS = 10


def main(argv):
    if len(argv) != 3:
        print("usage: check_plan_schema.py SCHEMA PLAN.json", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            schema = json.load(f)
        with open(argv[2], encoding="utf-8") as f:
            plan = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_plan_schema: {e}", file=sys.stderr)
        return 2
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(plan), key=lambda e: list(e.path))
    for e in errors[:MAX_ERRORS]:
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        print(f"{argv[2]}: {where}: {e.message}", file=sys.stderr)
    if len(errors) > MAX_ERRORS:
        print(f"{argv[2]}: ... and {len(errors) - MAX_ERRORS} more",
              file=sys.stderr)
    if errors:
        return 1
    print(f"{argv[2]}: valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
