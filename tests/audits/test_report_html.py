"""The HTML audit and scan reports (audits/html.py) break lines between words: a narrow column never cuts
"FAIL" or "duplicates" in two (issue 38: "FA/IL", "dupli/cates" at 1400 px); only a long unbroken token (a
source_ref, a path) may break anywhere. The browser check of the same is in tests/audits/test_audit_report.py."""

from __future__ import annotations

import re
from pathlib import Path

from tomforge.audits.html import LONG_TOKEN, STYLE, render_html

TOKEN = "data/" + "x" * 60 + ".json#12345"
TABLE = (
    "| status | check | figure | action |\n|---|---|---|---|\n"
    f"| FAIL | within-side duplicates | 12 of 40 | see `{TOKEN}` and {TOKEN} |\n"
)


def rules() -> dict[str, str]:
    return {sel.strip(): body for sel, body in re.findall(r"([^{}]+)\{([^}]*)\}", STYLE)}


def test_no_rule_breaks_ordinary_words_anywhere() -> None:
    assert "break-all" not in STYLE and "word-break" not in STYLE
    anywhere = {sel for sel, body in rules().items() if "overflow-wrap: anywhere" in body}
    assert anywhere <= {"span.long", "pre"}, anywhere  # never td, th, p, li or code
    for sel in ("th, td", "p, li", "code"):
        assert "overflow-wrap: break-word" in rules()[sel], sel
    assert "overflow-wrap: anywhere" in rules()["span.long"]


def test_only_long_tokens_may_break_anywhere() -> None:
    page = render_html(TABLE, Path("."), "report")
    body = page.split("<body>", 1)[1]
    assert '<td class="status-fail">FAIL</td>' in body and "<td>within-side duplicates</td>" in body
    long_spans = re.findall(r'<span class="long">([^<]*)</span>', body)
    assert long_spans == [TOKEN, TOKEN]  # in the code span and in the plain text, nothing else
    assert all(len(t) >= LONG_TOKEN for t in long_spans)
    short = "y" * (LONG_TOKEN - 1)
    assert '<span class="long">' not in render_html(f"a {short} b", Path("."), "t").split("<body>", 1)[1]
