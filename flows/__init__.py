"""Prefect flows: the recipes (DESIGN 2), pauses and deployments."""
