"""Binary objects: only the parts that can hold text are scanned.

A PNG's pixels are compressed; byte-scanning them found an "e-mail" in the noise
of a real forest plot and refused the whole publication. Text chunks are still
scanned, and a secret there still refuses the object.
"""

from __future__ import annotations

import struct
import zlib

from pairlab.adapters.store.redacted_staging import redact_object
from pairlab.core.redaction import PNG_SIGNATURE, png_text


def chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def png(*extra: bytes, pixels: bytes = b"\x00" * 16) -> bytes:
    ihdr = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return (
        PNG_SIGNATURE
        + chunk(b"IHDR", ihdr)
        + b"".join(extra)
        + chunk(b"IDAT", pixels)
        + chunk(b"IEND", b"")
    )


def test_noise_in_pixel_data_is_not_a_finding() -> None:
    noisy = png(pixels=b"\x13g@nn.RRRT\x99 someone@example.com /home/alice/x")
    result = redact_object("forest.png", noisy)
    assert result.findings.total() == 0 and not result.is_refused_binary
    assert result.data == noisy


def test_text_chunks_are_scanned_and_a_secret_there_refuses_the_png() -> None:
    leaked = png(chunk(b"tEXt", b"Comment\0contact alice@example.com"))
    result = redact_object("forest.png", leaked)
    assert result.findings["email"] == 1
    assert result.is_refused_binary


def test_compressed_text_chunks_are_decompressed() -> None:
    body = b"Author\0\0" + zlib.compress(b"written in /home/alice/plots")
    text = png_text(png(chunk(b"zTXt", body)))
    assert text is not None and b"/home/alice/plots" in text


def test_a_truncated_or_foreign_file_named_png_is_scanned_whole() -> None:
    assert png_text(b"not a png at all") is None
    assert png_text(png()[:-6]) is None
    result = redact_object("fake.png", b"\x00\xff bob@example.com")
    assert result.is_refused_binary


def test_bytes_after_the_end_chunk_are_scanned() -> None:
    result = redact_object("forest.png", png() + b"tEXt\x00author=dev@example.com\x00")
    assert result.findings["email"] == 1 and result.is_refused_binary
