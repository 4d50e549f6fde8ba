"""Benchmarks: ``bench_*.py`` modules, each exposing ``run() -> list[Result]``; see README.md."""
