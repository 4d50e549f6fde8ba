"""``python3 -m pairlab.intervention mcp`` -- the same as the ``token-optimizer`` console script."""

from __future__ import annotations

import sys

from pairlab.intervention.cli import main

sys.exit(main())
