"""Worker process for large cohort analyses: ``python -m pairlab.core.analysis.worker``.

Serves :func:`pairlab.core.analysis.engine_pool.serve` on its stdin and stdout: the
settings, then chunks of cohorts, each answered with their result rows. The parent is
:func:`pairlab.core.analysis.engine_pool.run_shared`; the pickles never leave that pair
of processes. Anything else printed (a library's warning) goes to stderr, never into
the answers.
"""

from __future__ import annotations

import os
import sys

from pairlab.core.analysis.engine_pool import serve


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints: stderr
    serve(sys.stdin.buffer, answers)
    answers.close()


if __name__ == "__main__":
    main()
