"""Findings (issue 18): the semantic finding contract, the append-only graph and its
staleness, retrieval scoring with seeded holdouts, the per-episode evidence log
summary, exact tool-call joins and the claim-2 retrieval evidence. Pure: the
intervention (pairlab.intervention.finding_tools) and the adapters do the I/O."""
