"""benchmarks/status_floor.py reads answers as the command's transport gets them: by length,
chunked, gzip (write_floor.py reads its answers with the same function)."""

import gzip
import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import status_floor  # noqa: E402


def test_an_answer_by_content_length():
    stream = io.BytesIO(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + b"HTTP/1.1 201 Created\r\n\r\n")
    assert status_floor.read_answer(stream) == (200, b"hello")
    assert status_floor.read_answer(stream) == (201, b"")  # the next answer on the kept-alive connection


def test_a_chunked_gzip_answer_is_undone():
    body = gzip.compress(b'{"items": []}')
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:7], body[7:])) + b"0\r\n\r\n"
    stream = io.BytesIO(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n" + chunks)
    assert status_floor.read_answer(stream) == (200, b'{"items": []}')
