# One command per job; CI runs the same commands (.ci/run).
.PHONY: test check bench

test:
	uv run pytest

check:
	uv run ruff check . && uv run mypy && uv run lint-imports

bench:
	uv run python bench/run_all.py
