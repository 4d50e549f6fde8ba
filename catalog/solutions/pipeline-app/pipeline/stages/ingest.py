"""Stage 1: read raw lines into records."""

from pipeline.records import parse_record


def ingest(lines):
    return [parse_record(line) for line in lines if line.strip()]
