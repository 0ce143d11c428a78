"""Time the email path on a report-sized document and print the figures.

    PYTHONPATH=. python bench/bench_mailer.py [rows]

Builds an HTML report of ``rows`` table rows (default 150)
with a ``<style>`` block, then times :func:`inline_css`, :func:`check_email_safety`,
:func:`build_message` (with a CSV attachment) and delivery to a local aiosmtpd
server, and prints sizes. Nothing is asserted; the tests never time anything.
"""

from __future__ import annotations

import datetime as dt
import socket
import statistics
import sys
import time
from collections.abc import Callable

from aiosmtpd.controller import Controller

from paperwatch.report.message import (
    Attachment,
    build_message,
    check_email_safety,
    inline_css,
    message_bytes,
    subject_for,
)
from paperwatch.report.smtp import SmtpMailer
from paperwatch.settings import SmtpSettings

ABSTRACT = (
    "We propose SpectralKV, a KV cache compression method for long-context decoding that "
    "keeps the top spectral components of each head; it cuts memory by 4x at equal accuracy."
)


def report_html(rows: int) -> str:
    style = (
        "<style>body{margin:0;background:#f4f4f4} table.page{width:640px;background:#fff}"
        "td{font-family:Arial,sans-serif;font-size:14px;color:#222;padding:4px 8px}"
        "td.m{font-weight:bold} a{color:#0645ad}"
        "@media only screen and (max-width:660px){table.page{width:100% !important}}</style>"
    )
    body = "".join(
        f'<tr><td class="m">Method{i}</td><td>{ABSTRACT[:120]}</td>'
        f'<td><a href="https://github.com/lab/m{i}">code</a></td></tr>'
        for i in range(rows)
    )
    return (
        f"<!DOCTYPE html><html><head>{style}</head><body>"
        f'<table class="page" role="presentation">{body}</table></body></html>'
    )


def timed(fn: Callable[[], object], repeat: int = 7) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


class Sink:
    async def handle_DATA(self, server, session, envelope):
        return "250 OK"


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 150
    html = report_html(rows)
    inlined = inline_css(html)
    text = "\n".join(f"- Method{i}: {ABSTRACT[:80]}" for i in range(rows))
    csv = "\n".join(f"{i:016x},Method{i},{ABSTRACT}" for i in range(5000)).encode()

    def build() -> object:
        return build_message(
            subject=subject_for(["NeurIPS 2026"], "2026-W48", rows, 3),
            sender="paperwatch@example.org",
            recipients=["reader@example.org"],
            html=inlined,
            text=text,
            date=dt.datetime(2026, 11, 30, tzinfo=dt.UTC),
            message_id_domain="example.org",
            week="2026-W48",
            attachments=[Attachment(csv, "2026-W48-new-papers.csv", "text/csv")],
        )

    print(f"rows: {rows}")
    print(f"HTML before / after inlining: {len(html.encode()):,} / {len(inlined.encode()):,} bytes")
    problems = check_email_safety(inlined)
    if problems:
        print("not sendable:", "; ".join(problems))
        return
    message = build_message(
        subject="bench",
        sender="paperwatch@example.org",
        recipients=["reader@example.org"],
        html=inlined,
        text=text,
        date=dt.datetime(2026, 11, 30, tzinfo=dt.UTC),
        message_id_domain="example.org",
    )
    print(f"inline_css: {timed(lambda: inline_css(html)) * 1000:.1f} ms")
    print(f"check_email_safety: {timed(lambda: check_email_safety(inlined)) * 1000:.1f} ms")
    print(f"build_message (+5,000-row CSV, {len(csv):,} bytes): {timed(build) * 1000:.1f} ms")
    print(f"message size with CSV: {len(message_bytes(build())):,} bytes")  # type: ignore[arg-type]

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    controller = Controller(Sink(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        mailer = SmtpMailer(SmtpSettings(host="127.0.0.1", port=port, security="none"))
        n = 20
        start = time.perf_counter()
        for _ in range(n):
            mailer.send(message, week="2026-W48")
        elapsed = time.perf_counter() - start
        print(f"SMTP delivery to local aiosmtpd: {elapsed / n * 1000:.1f} ms per message")
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
