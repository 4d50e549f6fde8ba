"""Prefect tasks: thin wrappers over core and adapter functions.

A task adds only retries, logging and artifacts; the logic lives in pairlab.
Agent failures (non-zero exit, timeout, failed grader) are data and never
retried; infrastructure errors (Docker API, store, quota probe I/O) are.
"""
