"""Secret and personal-data redaction for everything that leaves the machine (DESIGN 11).

Pure: bytes/str in, redacted bytes/str and a count of findings by kind out. The
publisher (``pairlab.adapters.store.publish``) decides what to do with the result.

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
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

SecretPolicy = Literal["redact", "refuse"]
SECRET_POLICIES: tuple[SecretPolicy, ...] = ("redact", "refuse")

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

Span = tuple[int, int]


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only: same length, so spans map back to ``text``."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


@dataclass(frozen=True)
class _Pattern:
    """One rule: where it matches (spans to replace) and a cheap pre-check.

    ``triggers``: lower-case strings of which one must occur in the (ASCII-)lowered
    text for the rule to match at all; the regex is skipped otherwise.
    ``on_lower``: the regex is written in lower case and run on the lowered text
    (case-insensitive matching that keeps the regex engine's fast literal search).
    A group named ``secret`` narrows the replacement to that group.
    """

    kind: str
    regex: re.Pattern[str]
    triggers: tuple[str, ...]
    on_lower: bool = False

    def spans(self, text: str, lower: str) -> Iterator[Span]:
        has_secret = "secret" in self.regex.groupindex
        for match in self.regex.finditer(lower if self.on_lower else text):
            if has_secret and match.group("secret") is not None:
                yield match.span("secret")
            else:
                yield match.span()


@dataclass(frozen=True)
class _EmailPattern(_Pattern):
    """E-mail: find the domain after a literal ``@``, then walk back over the local part.

    A regex starting with the local part (or a lookbehind) is tried at every
    position of the text; anchoring on ``@`` is ~50x faster.
    """

    def spans(self, text: str, lower: str) -> Iterator[Span]:
        for match in self.regex.finditer(text):
            begin = match.start()
            while begin > 0 and text[begin - 1] in _EMAIL_LOCAL:
                begin -= 1
            if begin < match.start():
                yield begin, match.end()


_EMAIL_LOCAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")


def _p(kind: str, pattern: str, *triggers: str, on_lower: bool = False) -> _Pattern:
    return _Pattern(kind, re.compile(pattern), tuple(t.lower() for t in triggers), on_lower)


def _token(kind: str, prefix: str, rest: str, *, word_end: bool = True) -> _Pattern:
    """A provider token: a literal prefix not glued to a longer identifier.

    The literal comes first and the left-boundary check is a lookbehind *after*
    it, so the regex engine can search for the literal (a pattern that starts
    with a lookbehind is tried at every position: ~50x slower).
    """
    escaped = re.escape(prefix)
    end = r"(?![A-Za-z0-9_])" if word_end else ""
    return _p(kind, f"{escaped}(?<![A-Za-z0-9_]{escaped}){rest}{end}", prefix)


def _home(prefix: str, rest: str) -> _Pattern:
    escaped = re.escape(prefix)
    return _p("home-path", rf"{escaped}(?<![\w.-]{escaped}){rest}", prefix)


_PATH_CHARS = r"[^/\s\"'`<>|:;,]+"
_QUOTE = r"[\"']?\s*[:=]\s*[\"']?"

# Order matters: specific kinds first (a GCP key JSON field before the generic PEM
# block, Anthropic before OpenAI's "sk-"), e-mail and paths last.
_PATTERNS: tuple[_Pattern, ...] = (
    _p(
        "gcp-service-account-key",
        r'"private_key"\s*:\s*"(?P<secret>[^"]*?PRIVATE KEY[^"]*)"',
        '"private_key"',
    ),
    _p(
        "gcp-service-account-key",
        r'"private_key_id"\s*:\s*"(?P<secret>[0-9a-fA-F]{32,})"',
        '"private_key_id"',
    ),
    _p(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|[A-Za-z0-9+/=\s\\]*)",
        "-----BEGIN ",
    ),
    _token("anthropic-api-key", "sk-ant-", r"[A-Za-z0-9_-]{20,}", word_end=False),
    _token(
        "openai-api-key",
        "sk-",
        r"(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        word_end=False,
    ),
    _token("google-api-key", "AIza", r"[0-9A-Za-z_-]{35,}", word_end=False),
    _token("github-token", "gh", r"[pousr]_[A-Za-z0-9]{36,}"),
    _token("github-token", "github_pat_", r"[A-Za-z0-9_]{22,}", word_end=False),
    _token("slack-token", "xox", r"[abposre]-[A-Za-z0-9-]{10,}", word_end=False),
    _token("huggingface-token", "hf_", r"[A-Za-z0-9]{30,}"),
    _token("aws-access-key-id", "AKIA", r"[0-9A-Z]{16}"),
    _token("aws-access-key-id", "ASIA", r"[0-9A-Z]{16}"),
    # Case-insensitive rules: lower-case regexes run on the lowered text.
    _p(
        "aws-secret-access-key",
        r"(?:aws_secret_access_key|aws_secret_key|secretaccesskey)"
        + _QUOTE
        + r"(?P<secret>[a-z0-9/+=]{30,})",
        "aws_secret_",
        "secretaccesskey",
        on_lower=True,
    ),
    _p(
        "auth-header",
        r"authorization"
        + _QUOTE
        + r"(?:(?:bearer|basic|token|bot)\s+)?(?P<secret>[a-z0-9._~+/-]{8,}=*)",
        "authorization",
        on_lower=True,
    ),
    _p(
        "auth-header",
        r"(?:api[_-]?key)" + _QUOTE + r"(?P<secret>[a-z0-9._~+/-]{16,}=*)",
        "api-key",
        "api_key",
        "apikey",
        on_lower=True,
    ),
    _p(
        "bearer-token",
        r"bearer\s+(?P<secret>[a-z0-9._~+/-]{16,}=*)",
        "bearer",
        on_lower=True,
    ),
    _EmailPattern(
        "email",
        re.compile(r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9_])"),
        ("@",),
    ),
    _home("/home/", _PATH_CHARS),
    _home("/Users/", _PATH_CHARS),
    _home("/root", r"(?=/|\b)"),
    # C:\Users\name (and its JSON-escaped C:\\Users\\name); the drive letter is kept.
    _p(
        "home-path",
        r"Users(?:(?<=[A-Za-z]:\\Users)|(?<=[A-Za-z]:\\\\Users))(?:\\\\|\\)[^\\\s\"'`<>|:;,]+",
        "users",
    ),
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
    lower = ascii_lower(text)
    for pattern in _PATTERNS:
        if not any(trigger in lower for trigger in pattern.triggers):
            continue
        spans = list(pattern.spans(text, lower))
        if not spans:
            continue
        findings[pattern.kind] += len(spans)
        text = _replace_spans(text, spans, placeholder(pattern.kind))
        lower = ascii_lower(text)
    return TextRedaction(text=text, findings=findings)


def _replace_spans(text: str, spans: list[Span], replacement: str) -> str:
    parts: list[str] = []
    cursor = 0
    for start, end in spans:  # finditer order: ascending, non-overlapping
        parts.append(text[cursor:start])
        parts.append(replacement)
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)


def scan_text(text: str) -> Counter[str]:
    """Findings by kind, without producing redacted text."""
    return redact_text(text).findings


def is_credential_kind(kind: str) -> bool:
    """A finding that is a credential (not personal data: e-mail addresses, home paths)."""
    return "email" not in kind and "path" not in kind


def credential_regex() -> str:
    """One Python regex that ``re.search`` finds in a text exactly where :func:`scan_text`
    finds a credential kind (:func:`is_credential_kind`): for a JSON schema's ``pattern``
    that a server validates with Python's ``re`` (Prefect's run input). Case-insensitive
    rules become ``(?i:...)`` groups on the original text; ``secret`` groups are unnamed."""
    parts = []
    for rule in _PATTERNS:
        if not is_credential_kind(rule.kind):
            continue
        body = rule.regex.pattern.replace("(?P<secret>", "(?:")
        parts.append(f"(?i:{body})" if rule.on_lower else f"(?:{body})")
    return "|".join(parts)


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


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_TEXT_CHUNKS = (b"tEXt", b"iTXt", b"zTXt")


def png_text(data: bytes) -> bytes | None:
    """The text a PNG carries (tEXt/iTXt/zTXt chunks, decompressed), or None if not a PNG.

    Pixel data (IDAT) is compressed and cannot hold readable text; byte-scanning
    it finds "e-mails" in noise, so only the text chunks are scanned.
    """
    if not data.startswith(PNG_SIGNATURE):
        return None
    pos, texts = len(PNG_SIGNATURE), []
    while pos + 8 <= len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if len(body) != length or pos + 12 + length > len(data):
            return None  # truncated: not a PNG we can vouch for
        if kind in _PNG_TEXT_CHUNKS:
            texts.append(_png_chunk_text(kind, body))
        pos += 12 + length  # length, type, body, CRC
        if kind == b"IEND":
            return b"\n".join([*texts, data[pos:]])  # bytes after IEND are scanned raw
    return None


def _png_chunk_text(kind: bytes, body: bytes) -> bytes:
    keyword, _, rest = body.partition(b"\0")
    try:
        if kind == b"zTXt":  # compression method byte, then zlib data
            return keyword + b" " + zlib.decompress(rest[1:])
        if kind == b"iTXt":  # flag, method, language\0, translated keyword\0, text
            flag, rest = rest[:1], rest[2:]
            _, _, rest = rest.partition(b"\0")
            _, _, text = rest.partition(b"\0")
            return keyword + b" " + (zlib.decompress(text) if flag == b"\x01" else text)
    except zlib.error:
        return body  # undecodable: scan the raw bytes rather than nothing
    return keyword + b" " + rest
