"""``python3 -m pairlab_simclient``."""

import sys

from pairlab_simclient import main

sys.exit(main())
