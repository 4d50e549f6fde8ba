"""Secret and personal-data redaction for everything that leaves the machine (DESIGN 11).

Pure: bytes/str in, redacted bytes/str and a count of findings by kind out. The
publisher (``pairlab.adapters.publish``) decides what to do with the result.

What is looked for (``KINDS``): API keys and tokens of the major providers
(Anthropic, OpenAI, Google, GitHub, Slack, Hugging Face), cloud credentials (AWS
access key ids and secret keys, GCP service-account private keys), PEM private
keys, bearer/authorization headers, e-mail addresses and absolute home-directory
paths. A finding is replaced by ``[REDACTED:<kind>]`` (for assignments such as
``aws_secret_access_key=...`` only the value is replaced, so the text stays
readable). Redaction is idempotent: redacted text has no findings.

Text vs binary: a UTF-8 decodable object (JSONL, JSON, Markdown, logs...) is
redacted in place; the replacement contains no quote or backslash, so JSON stays
valid. A binary object is only *scanned* (decoded as Latin-1, which maps bytes
1:1, so ASCII secrets are found); it cannot be rewritten safely, so a finding in
it means the object is refused whatever the policy. Structured binary formats
whose strings can be rewritten (Parquet) are handled by the publisher, which
redacts their string cells with :func:`redact_text` and rebuilds them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

SecretPolicy = Literal["redact", "refuse"]
SECRET_POLICIES: tuple[SecretPolicy, ...] = ("redact", "refuse")

# Left boundary for token-like patterns: not glued to a longer identifier.
_B = r"(?<![A-Za-z0-9_])"
# Right boundary: the token ends where identifier characters end.
_E = r"(?![A-Za-z0-9_])"


@dataclass(frozen=True)
class _Pattern:
    kind: str
    regex: re.Pattern[str]
    # When the regex has a group named "secret", only that group is replaced.


def _p(kind: str, pattern: str, flags: int = 0) -> _Pattern:
    return _Pattern(kind, re.compile(pattern, flags))


# Order matters: specific kinds first (a GCP key JSON field before the generic PEM
# block, Anthropic before OpenAI's "sk-"), e-mail and paths last.
_PATTERNS: tuple[_Pattern, ...] = (
    _p(
        "gcp-service-account-key",
        r'"private_key"\s*:\s*"(?P<secret>[^"]*?PRIVATE KEY[^"]*)"',
    ),
    _p("gcp-service-account-key", r'"private_key_id"\s*:\s*"(?P<secret>[0-9a-fA-F]{32,})"'),
    _p(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|[A-Za-z0-9+/=\s\\]*)",
    ),
    _p("anthropic-api-key", _B + r"sk-ant-[A-Za-z0-9_-]{20,}"),
    _p("openai-api-key", _B + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    _p("google-api-key", _B + r"AIza[0-9A-Za-z_-]{35,}"),
    _p("github-token", _B + r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}" + _E),
    _p("github-token", _B + r"github_pat_[A-Za-z0-9_]{22,}"),
    _p("slack-token", _B + r"xox[abposre]-[A-Za-z0-9-]{10,}"),
    _p("huggingface-token", _B + r"hf_[A-Za-z0-9]{30,}" + _E),
    _p("aws-access-key-id", _B + r"(?:AKIA|ASIA)[0-9A-Z]{16}" + _E),
    _p(
        "aws-secret-access-key",
        r"(?i:aws_secret_access_key|aws_secret_key|secretaccesskey)[\"']?\s*[:=]\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+=]{30,})",
    ),
    _p(
        "auth-header",
        r"(?i:authorization|proxy-authorization)[\"']?\s*[:=]\s*[\"']?"
        r"(?:(?i:bearer|basic|token|bot)\s+)?(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)",
    ),
    _p(
        "auth-header",
        r"(?i:x-api-key|x-goog-api-key|api[_-]?key)[\"']?\s*[:=]\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)",
    ),
    _p("bearer-token", r"(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)"),
    _p(
        "email",
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
        + _E,
    ),
    _p(
        "home-path",
        r"(?<![\w.-])(?:/home/[^/\s\"'`<>|:;,]+|/Users/[^/\s\"'`<>|:;,]+|/root(?=/|\b))",
    ),
    _p("home-path", r"(?<![\w.-])[A-Za-z]:(?:\\\\|\\)Users(?:\\\\|\\)[^\\\s\"'`<>|:;,]+"),
)

KINDS: tuple[str, ...] = tuple(dict.fromkeys(p.kind for p in _PATTERNS))


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True)
class TextRedaction:
    text: str
    findings: Counter[str] = field(default_factory=Counter)

    @property
    def has_findings(self) -> bool:
        return self.findings.total() > 0


def redact_text(text: str) -> TextRedaction:
    """Replace every finding by ``[REDACTED:<kind>]``; count findings by kind."""
    findings: Counter[str] = Counter()
    for pattern in _PATTERNS:
        text = pattern.regex.sub(_replacer(pattern.kind, findings), text)
    return TextRedaction(text=text, findings=findings)


def _replacer(kind: str, findings: Counter[str]) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        findings[kind] += 1
        if "secret" in match.re.groupindex and match.group("secret") is not None:
            start, end = match.span("secret")
            base = match.start()
            whole = match.group(0)
            return whole[: start - base] + placeholder(kind) + whole[end - base :]
        return placeholder(kind)

    return replace


def scan_text(text: str) -> Counter[str]:
    """Findings by kind, without producing redacted text."""
    return redact_text(text).findings


@dataclass(frozen=True)
class ObjectRedaction:
    """The outcome for one object: the bytes to publish, or why it cannot be."""

    data: bytes
    findings: Counter[str]
    is_text: bool

    @property
    def is_refused_binary(self) -> bool:
        """A binary object with findings: it cannot be rewritten, so it must not leave."""
        return not self.is_text and self.findings.total() > 0


def redact_bytes(data: bytes) -> ObjectRedaction:
    """Redact a text object, or scan a binary one (see the module docstring)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return ObjectRedaction(data=data, findings=scan_text(data.decode("latin-1")), is_text=False)
    result = redact_text(text)
    if not result.has_findings:
        return ObjectRedaction(data=data, findings=result.findings, is_text=True)
    return ObjectRedaction(data=result.text.encode("utf-8"), findings=result.findings, is_text=True)
