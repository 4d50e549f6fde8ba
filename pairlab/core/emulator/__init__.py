"""Pure pieces of the provider emulator (DESIGN 4b): prompt blocks and caching, the
quota model and its surfaces, the scripted model, the ground-truth ledger rows."""
