"""Worker process for large cohort analyses: ``python -m pairlab.core.analysis.worker``.

Reads one pickled ``(settings, jobs)`` from stdin, bootstraps those cohorts with
:func:`pairlab.core.analysis.engine.run_chunk` and writes the pickled results to stdout.
The parent is :func:`pairlab.core.analysis.engine.run_cohorts`; the pickles never
leave that pair of processes.
"""

from __future__ import annotations

import pickle
import sys

from pairlab.core.analysis.engine import run_chunk


def main() -> None:
    settings, jobs = pickle.load(sys.stdin.buffer)
    results = run_chunk(settings, jobs)
    pickle.dump(results, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
