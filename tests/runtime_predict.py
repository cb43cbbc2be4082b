#!/usr/bin/python3
"""Compares gtplan-run's recorded collectives with the simulator's prediction.

usage: runtime_predict.py PREFIX RECORD

PREFIX is `gtplan sim ... --predict-record PREFIX`'s prefix, RECORD the
`gtplan-run --record RECORD` path; rank r's files are PREFIX.r and RECORD.r,
for every r for which PREFIX.r exists (from 0 up). Per rank, the recorded
collectives of the train call whose step the prediction covers (all steps
when it predicted as many, else the first ones) must equal the predicted
ones, in order, on every key the prediction has. Prints one line per rank
(equal, or the first difference with both lines) and a summary.
Exit 0 when every rank agrees, 1 when one does not, 2 on a usage or read
error (no prediction files, a missing record, a line that is not JSON).
"""
import json
import os
import sys


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def show(d):
    return json.dumps(d, sort_keys=True, separators=(",", ":"))


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    prefix, record = argv[1], argv[2]
    try:
        pred, rec = [], []
        while os.path.exists(f"{prefix}.{len(pred)}"):
            pred.append(lines(f"{prefix}.{len(pred)}"))
        if not pred:
            raise OSError(f"no prediction {prefix}.0")
        for r in range(len(pred)):
            rec.append(lines(f"{record}.{r}"))
    except (OSError, ValueError) as e:
        print(f"runtime_predict: {e}", file=sys.stderr)
        return 2
    bad = 0
    for r, (want, got) in enumerate(zip(pred, rec)):
        steps = {d["step"] for d in want}
        got = [d for d in got if d.get("call") == "train" and
               d.get("step") in steps]
        diff = None
        for i in range(max(len(want), len(got))):
            if i >= len(want):
                diff = f"the run issued more: {show(got[i])}"
            elif i >= len(got):
                diff = f"the run stopped before the predicted {show(want[i])}"
            else:
                keys = [k for k in want[i] if want[i][k] != got[i].get(k)]
                if keys:
                    diff = (f"differs in {', '.join(keys)}:\n    predicted "
                            f"{show(want[i])}\n    recorded  "
                            f"{show({k: got[i].get(k) for k in want[i]})}")
            if diff:
                print(f"rank {r}: collective #{i} of the train call: {diff}")
                bad += 1
                break
        else:
            print(f"rank {r}: {len(want)} collectives over step"
                  f"{'s' if len(steps) > 1 else ''} "
                  f"{', '.join(map(str, sorted(steps))) or '-'}: equal")
    print(f"runtime_predict: {len(pred) - bad} of {len(pred)} ranks agree "
          f"with the prediction")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
