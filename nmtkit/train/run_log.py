"""``train.jsonl``: one JSON line per training log and validation, continued across ``--resume``.

A resumed run drops the records past its checkpoint's step (the killed run logged them, the resumed
one logs them again) and a line cut short by the kill, so each step has one record. A new run in a
folder holding the log of a run that left no ``last.pt`` moves that log aside to ``train.jsonl.old``
(``.old1``, ``.old2``, ... if taken).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from nmtkit.data.text import atomic_output
from nmtkit.errors import writing


class RunLog:
    def __init__(self, path: Path):
        self.path = path

    def start(self, resumed_at: Optional[int]) -> Optional[str]:
        """Prepare the log for a new run (``resumed_at`` None) or one resumed at that step; what was done, if
        anything worth saying."""
        if not self.path.exists():
            return None
        if resumed_at is None:
            old = next(p for p in (self.path.with_name(f"{self.path.name}.old{n or ''}") for n in range(10**6))
                       if not p.exists())
            self.path.replace(old)
            return f"moved the log of an earlier run that saved no last.pt to {old}"
        kept, later, broken = [], 0, []
        for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                broken.append(number)
                continue
            if isinstance(record, dict) and record.get("step", 0) <= resumed_at:
                kept.append(line)
            else:
                later += 1
        if not (later or broken):
            return None
        with atomic_output(self.path) as f:
            f.write("".join(line + "\n" for line in kept))
        said = [f"{later} record(s) past step {resumed_at}, the step resumed from"] if later else []
        said += [f"{len(broken)} line(s) that are not JSON (line {', '.join(map(str, broken[:5]))}"
                 f"{' ...' if len(broken) > 5 else ''}: cut short by a kill, or changed)"] if broken else []
        return f"dropped from {self.path}: {'; '.join(said)}"

    def append(self, record: dict) -> None:
        with writing(self.path), open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
