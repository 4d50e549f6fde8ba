# One command per job; CI runs the same commands (.ci/run).
.PHONY: test test-fast check bench

test:
	uv run pytest

# every module's unit and integration tests, without the slow ones (<= 10 min on the dev VM)
test-fast:
	uv run pytest -m "not slow"

check:
	uv run ruff check . && uv run mypy && uv run lint-imports

bench:
	uv run python bench/run_all.py
