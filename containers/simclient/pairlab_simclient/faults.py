"""Injected failures for backend tests (``PAIRLAB_SIM_FAULT``).

* ``hang``: loop forever.
* ``hang-ignore-term``: start a child that ignores SIGTERM (its pid goes to
  ``$PAIRLAB_STATE_DIR/simclient-child.pid``), then loop forever; only killing
  the whole process group with SIGKILL ends both.
* ``crash``: exit 3 at once.
* ``oom``: allocate (and touch) memory until killed; if the allocator refuses
  first (an address-space limit), die by SIGKILL as an OOM kill would.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

FAULTS = ("hang", "hang-ignore-term", "crash", "oom")
CRASH_EXIT_CODE = 3
CHILD_PID_FILE = "simclient-child.pid"

_CHILD_CODE = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "while True:\n"
    "    time.sleep(0.1)\n"
)


def _loop_forever() -> None:
    while True:
        time.sleep(0.1)


def trigger_fault(fault: str, state_dir: Path | None) -> int:
    """Run the fault; returns an exit code only for ``crash`` (the others never return)."""
    print(f"simclient: injected fault '{fault}'", file=sys.stderr, flush=True)
    if fault == "crash":
        return CRASH_EXIT_CODE
    if fault == "hang":
        _loop_forever()
    if fault == "hang-ignore-term":
        child = subprocess.Popen([sys.executable, "-c", _CHILD_CODE])
        if state_dir is not None:
            state_dir.mkdir(parents=True, exist_ok=True)
            (state_dir / CHILD_PID_FILE).write_text(f"{child.pid}\n", encoding="utf-8")
        _loop_forever()
    if fault == "oom":
        hoard: list[bytes] = []
        try:
            while True:
                hoard.append(b"\x01" * (32 << 20))
        except MemoryError:
            hoard.clear()
            print("simclient: MemoryError: out of memory", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    raise ValueError(f"unknown PAIRLAB_SIM_FAULT '{fault}' (known: {', '.join(FAULTS)})")
