"""The HTML version of the audit report: the same Markdown rendered by markdown-it-py (CommonMark
plus tables), figures embedded as data URIs so the single file opens anywhere (a browser, the Hub),
status cells coloured, matched spans highlighted.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from markdown_it import MarkdownIt

from tomforge.schemas.atomic_files import write_text_atomically

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1200px;
       padding: 0 16px; color: #1a1a1a; }
h1 { font-size: 22px; } h2 { font-size: 18px; border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 32px; }
h3 { font-size: 15px; margin-top: 24px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; text-align: left; overflow-wrap: break-word; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
p, li { overflow-wrap: break-word; }
span.long { overflow-wrap: anywhere; }
div.wide { overflow-x: auto; max-width: 100%; }
th { background: #f2f2f2; }
td.status-fail { background: #f4c7c3; color: #8b0000; font-weight: 700; }
td.status-warn { background: #fce8b2; color: #7a4d00; font-weight: 700; }
td.status-pass { background: #d4edda; color: #155724; }
td strong { background: #fff3a0; font-weight: 600; }
td.status-fail strong, td.status-warn strong { background: none; }
code { font-size: 12px; color: #555; overflow-wrap: break-word; }
img { max-width: 100%; border: 1px solid #eee; }
"""
_IMG = re.compile(r'<img src="([^":/]+\.png)"')
_STATUS = re.compile(r"<td>(FAIL|warn|pass)</td>")
# Words wrap between words only: a table column never shrinks below its longest word, so "FAIL" or "duplicates"
# is never cut in two (issue 38: "FA/IL", "dupli/cates" at 1400 px, from `overflow-wrap: anywhere` on every
# cell). Only a long unbroken token (a source_ref, a path, a hash) may break anywhere, through its own span.
LONG_TOKEN = 30
_TEXT = re.compile(r">([^<]+)<")
_LONG = re.compile(r"[^\s]{%d,}" % LONG_TOKEN)


def _mark_long_tokens(page: str) -> str:
    """Wrap each run of LONG_TOKEN or more non-space characters of the text (never inside a tag) in
    `<span class="long">`, the only place where the page breaks inside a word."""

    def text(match: re.Match[str]) -> str:
        return ">" + _LONG.sub(lambda t: f'<span class="long">{t.group(0)}</span>', match.group(1)) + "<"

    return _TEXT.sub(text, page)


def _embed(page: str, folder: Path) -> str:
    """Replace each local PNG reference with its bytes as a data URI."""

    def data_uri(match: re.Match[str]) -> str:
        data = base64.b64encode((folder / match.group(1)).read_bytes()).decode("ascii")
        return f'<img src="data:image/png;base64,{data}"'

    return _IMG.sub(data_uri, page)


def render_html(markdown: str, folder: Path, title: str) -> str:
    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    body = _STATUS.sub(lambda m: f'<td class="status-{m.group(1).lower()}">{m.group(1)}</td>', body)
    body = _embed(_mark_long_tokens(body), folder)
    # a table wider than the page (16 columns of identifiers) scrolls inside its own box; the page never does
    body = body.replace("<table>", '<div class="wide"><table>').replace("</table>", "</table></div>")
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
        f"<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )


def write_html(markdown: str, path: Path, title: str) -> Path:
    """`audit_report.html` beside the Markdown, figures read from the same folder."""
    write_text_atomically(path, render_html(markdown, path.parent, title))
    return path
