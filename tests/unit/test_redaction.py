"""Redaction rules: every kind is found and replaced, benign text is left alone."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pairlab.core.redaction import (
    KINDS,
    credential_regex,
    is_credential_kind,
    redact_bytes,
    redact_text,
    scan_text,
)

SAMPLES: dict[str, tuple[str, str]] = {
    "anthropic-api-key": ("x sk-ant-api03-" + "A1b2" * 10 + " y", "sk-ant-api03-"),
    "openai-api-key": ("k=sk-proj-" + "Zz09" * 10, "sk-proj-"),
    "google-api-key": ("AIza" + "Sy0123456789abcdefghijABCDEFGHIJ_-x", "AIzaSy"),
    "github-token": ("token ghp_" + "a1B2" * 9, "ghp_"),
    "slack-token": ("xoxp-1234567890-abcdefghij", "xoxp-"),
    "huggingface-token": ("hf_" + "abcdEFGH12" * 4, "hf_abcd"),
    "aws-access-key-id": ("id ASIAABCDEFGHIJKLMNOP end", "ASIAABCDEFGHIJKLMNOP"),
    "aws-secret-access-key": (
        'AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
        "wJalrXUtnFEMI",
    ),
    "gcp-service-account-key": ('{"private_key_id": "' + "ab" * 20 + '"}', "abababab"),
    "private-key": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXk",
    ),
    "auth-header": ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
    "bearer-token": ("send Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig", "eyJhbGciOiJIUzI1NiJ9"),
    "email": ("ping first.last+tag@sub.example.co.uk now", "first.last"),
    "home-path": ("cd /Users/jdoe/src", "jdoe"),
}


def test_every_kind_has_a_sample() -> None:
    assert set(SAMPLES) == set(KINDS)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_each_kind_is_redacted_and_counted(kind: str) -> None:
    text, secret = SAMPLES[kind]
    result = redact_text(text)
    assert secret not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert dict(result.findings) == {kind: 1}


def test_assignment_keeps_its_name_and_json_stays_valid() -> None:
    key = {
        "type": "service_account",
        "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----\n",
        "note": "owner alice@example.com at /home/alice/keys",
    }
    result = redact_text(json.dumps(key))
    parsed = json.loads(result.text)
    assert parsed["private_key"] == "[REDACTED:gcp-service-account-key]"
    assert parsed["note"] == "owner [REDACTED:email] at [REDACTED:home-path]/keys"
    assert dict(result.findings) == {"gcp-service-account-key": 1, "email": 1, "home-path": 1}


@pytest.mark.parametrize(
    "text",
    [
        "the task-abcdefghijklmnopqrstuvwxyz0123 is done",
        "a bearer of good news; sk-short; AKIA123",
        "/srv/home/data and /tmp/root/x and /rooted",
        "version 1.2.3@latest and user@localhost",
        "price 0.003 USD per 1000 tokens",
    ],
)
def test_benign_text_is_untouched(text: str) -> None:
    result = redact_text(text)
    assert result.text == text and not result.has_findings


def test_the_credential_regex_finds_what_the_scan_finds() -> None:
    """One regex for a JSON schema's pattern (the approval form): it matches a text exactly
    when the scan finds a credential kind, e-mail addresses and home paths aside."""
    pattern = re.compile(credential_regex())
    benign = [
        "the task-abcdefghijklmnopqrstuvwxyz0123 is done",
        "a bearer of good news; sk-short; AKIA123",
        "looks fine, approved by ops-alice",
    ]
    for kind, (text, _) in SAMPLES.items():
        assert bool(pattern.search(text)) is is_credential_kind(kind), kind
    # a case-insensitive rule stays case-insensitive in the one regex
    assert pattern.search(SAMPLES["aws-secret-access-key"][0].lower())
    assert pattern.search("AUTHORIZATION: BEARER ABCDEFGHIJKLMNOP1234")
    for text in [*benign, SAMPLES["email"][0], SAMPLES["home-path"][0]]:
        assert not pattern.search(text) and not any(map(is_credential_kind, scan_text(text)))


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact_text(text)
    twice = redact_text(once.text)
    assert twice.text == once.text
    assert not twice.has_findings


@given(st.lists(st.sampled_from(sorted(SAMPLES)), min_size=1, max_size=6), st.text(max_size=20))
def test_counts_add_up_across_mixed_text(kinds: list[str], filler: str) -> None:
    # Separators keep planted values apart; the filler never forms a finding on its own.
    filler = "".join(c for c in filler if c.isalpha() or c == " ")
    text = "\n".join(f"{filler} {SAMPLES[k][0]} ;" for k in kinds)
    result = redact_text(text)
    assert sum(result.findings.values()) == len(kinds)
    for kind in kinds:
        assert SAMPLES[kind][1] not in result.text


def test_binary_objects_are_scanned_not_rewritten() -> None:
    clean = bytes(range(256))
    outcome = redact_bytes(clean)
    assert not outcome.is_text and outcome.data == clean and not outcome.is_refused_binary
    dirty = b"\x89PNG\xff\xfe" + b"AKIAABCDEFGHIJKLMNOP" + b"\x00\xff"
    outcome = redact_bytes(dirty)
    assert outcome.is_refused_binary and outcome.data == dirty
    assert dict(outcome.findings) == {"aws-access-key-id": 1}


def test_text_objects_without_findings_are_byte_identical() -> None:
    data = "naïve café\r\n".encode()
    assert redact_bytes(data).data is data
