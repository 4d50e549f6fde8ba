"""The provider emulator: an HTTP service speaking the Anthropic Messages and OpenAI
Responses wire formats, played by the scripted model (see docs/emulator.md)."""

from pairlab.adapters.emulator.server import EpisodeHandle, ProviderEmulator
from pairlab.core.emulator.request_ledger import EpisodeRegistration, Fault

__all__ = ["EpisodeHandle", "EpisodeRegistration", "Fault", "ProviderEmulator"]
