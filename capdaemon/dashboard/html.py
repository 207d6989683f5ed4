"""HTML building blocks of the dashboard: escaping, the page frame, its style, script and CSP.

Every string that reaches a page passes through `esc` (text and attribute values alike): it
shows control and format characters visibly (`\u202e`, the way `capdaemon why` prints them,
so a bidi override in a PR title cannot reorder what is drawn) and then escapes the markup.
The page carries one inline style and one inline script, allowed by their SHA-256 in the
Content-Security-Policy; nothing else may run or load (no inline handlers, no remote hosts).
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable
from datetime import UTC
from functools import cache

from capdaemon.quoting import printable
from capdaemon.timefmt import parse_utc

NAV = (
    ("index.html", "Overview"),
    ("prs.html", "PRs"),
    ("queue.html", "Merge queue"),
    ("trends.html", "Trends"),
    ("agents.html", "Agents and permissions"),
    ("repos.html", "Repos"),
)

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
header{background:#1d2430;color:#fff;padding:.6em 1.2em;display:flex;gap:1.4em;align-items:center}
header a{color:#cfe0ff;text-decoration:none;white-space:nowrap}
header a.on{color:#fff;font-weight:600}
header .note{margin-left:auto;font-size:12px;color:#aab}
main{padding:1em 1.4em;max-width:1400px}
h1{font-size:20px}h2{font-size:16px;margin-top:1.6em}
table{border-collapse:collapse;background:#fff;width:100%}
th,td{border:1px solid #dde;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#eef1f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
.banner{background:#fde8e8;border:1px solid #c53030;color:#7b1a1a;padding:.6em 1em;margin:.6em 0}
.ok{color:#1f7a3a;font-weight:600}.bad{color:#b42318;font-weight:600}
.q{display:inline-block;min-width:1.4em;text-align:center;border-radius:3px;color:#fff}
.qA{background:#2f855a}.qB{background:#2b6cb0}.qC{background:#b7791f}.qD{background:#c53030}
.cards{display:flex;flex-wrap:wrap;gap:1em}.card{background:#fff;border:1px solid #dde;
padding:.6em 1em;min-width:10em}.card b{display:block;font-size:22px}
pre{background:#fff;border:1px solid #dde;padding:.8em;white-space:pre-wrap;word-break:break-word}
code{font-size:12px}.muted{color:#667}form{margin:.6em 0}input[type=search]{width:24em}
.scroll{overflow-x:auto;max-width:100%}.scroll td{overflow-wrap:anywhere;min-width:6em}
.wait{display:block;min-width:16em}.wait b{font-weight:600;color:#7b4a00}
ol.timeline{list-style:none;padding-left:0;border-left:3px solid #cdd;margin-left:.6em}
ol.timeline li{margin:0 0 .7em;padding-left:1em}ol.timeline .when{color:#667;font-size:12px}
.kind-verdict{border-left:3px solid #2b6cb0;margin-left:-1.2em;padding-left:1em}
.kind-vote{border-left:3px solid #b7791f;margin-left:-1.2em;padding-left:1em}
.kind-action{border-left:3px solid #2f855a;margin-left:-1.2em;padding-left:1em}
.ranges a{margin-right:.8em}.ranges a.on{font-weight:600}
"""

# Live filter of the PRs table (also reads ?q= so the same page works from file://).
JS = """
(function(){
var q=document.getElementById('q'),rows=document.querySelectorAll('#prs tbody tr'),
n=document.getElementById('shown');if(!q)return;
function apply(){var w=q.value.toLowerCase().split(/\\s+/).filter(Boolean),c=0;
rows.forEach(function(r){var t=r.textContent.toLowerCase(),m=w.every(function(x){
return t.indexOf(x)>=0;});r.hidden=!m;if(m)c++;});if(n)n.textContent=String(c);}
var p=new URLSearchParams(location.search).get('q');if(p!==null&&!q.value)q.value=p;
q.addEventListener('input',apply);apply();})();
"""


def visible(value: object) -> str:
    """The text with control and format characters (U+202E, U+2066, zero-width ones) shown
    as escapes, line breaks kept (`printable` per line: the `why` text's helper)."""
    text = "" if value is None else str(value)
    if text.isprintable():
        return text
    return "\n".join(printable(line) for line in text.split("\n"))


def esc(value: object) -> str:
    """Text or attribute value, shown visibly (`visible`) and escaped (`&<>"'` replaced)."""
    return html.escape(visible(value), quote=True)


def when(ts: object) -> str:
    """An audit timestamp as local time to the second, UTC (to the second) on hover; text that
    is not a timestamp is shown as it is."""
    text = "" if ts is None else str(ts)
    try:
        dt = parse_utc(text, "ts")
    except ValueError:
        return esc(text)
    utc = dt.astimezone(UTC).replace(microsecond=0)
    iso = utc.isoformat().replace("+00:00", "Z")
    local = utc.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")  # the server's zone
    return (
        f'<time datetime="{esc(iso)}" title="{esc(iso.replace("T", " "))} UTC">{esc(local)}</time>'
    )


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@cache
def csp(*, meta: bool = False) -> str:
    """The Content-Security-Policy (the `<meta>` form omits what only a header can carry)."""
    parts = [
        "default-src 'none'",
        f"script-src {_sha(JS)}",
        f"style-src {_sha(CSS)}",
        "img-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
    ]
    if not meta:
        parts.append("frame-ancestors 'none'")
    return "; ".join(parts)


FAVICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    '<rect width="16" height="16" rx="3" fill="#1d2430"/>'
    '<path d="M4 8l3 3 5-6" stroke="#fff" stroke-width="2" fill="none"/></svg>'
)


def page(
    *,
    active: str,
    title: str,
    body: str,
    root: str = "",
    problems: Iterable[tuple[str, str]] = (),
    note: str = "",
    note_html: str = "",
    static: bool = False,
    refresh: int = 0,
) -> str:
    """A whole page: frame, navigation, error banners (one per unreadable file), body.

    `root` prefixes links ("/" when served, so every page's links work wherever it is, the
    404 included; "" or "../" in the static export); `static` adds the `<meta>` CSP (a file
    opened from disk gets no headers); `refresh` reloads the page every so many seconds
    (a `<meta>` refresh: no script, so the CSP stays as strict).
    """
    nav = "".join(
        f'<a href="{esc(root + href)}"{" class=on" if href == active else ""}>{esc(label)}</a>'
        for href, label in NAV
    )
    banners = "".join(
        f'<div class="banner" role="alert">State file <code>{esc(f)}</code> could not be read: '
        f"{esc(m)}</div>"
        for f, m in problems
    )
    meta = f'<meta http-equiv="Content-Security-Policy" content="{esc(csp(meta=True))}">'
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        + (meta if static else "")
        + (f'<meta http-equiv="refresh" content="{int(refresh)}">' if refresh > 0 else "")
        + '<meta name="referrer" content="no-referrer">'
        + '<meta name="viewport" content="width=device-width, initial-scale=1">'
        + f'<link rel="icon" type="image/svg+xml" href="{esc(root)}favicon.svg">'
        + f"<title>{esc(title)} · capdaemon</title><style>{CSS}</style></head><body>"
        + f'<header><b>capdaemon</b>{nav}<span class="note">{esc(note)}{note_html}</span></header>'
        + f"<main>{banners}<h1>{esc(title)}</h1>{body}</main>"
        + f"<script>{JS}</script></body></html>\n"
    )


def table(
    head: Iterable[str], rows: Iterable[Iterable[str]], *, id_: str = "", scroll: bool = False
) -> str:
    """A table; `head` is plain text (escaped here), cells are HTML the caller escaped. An
    empty table says "none"; `scroll` lets a wide one scroll inside the page."""
    heads = list(head)
    ths = "".join(f"<th>{esc(h)}</th>" for h in heads)
    trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    if not trs:
        trs = f'<tr class="none"><td colspan="{len(heads)}" class="muted">none</td></tr>'
    ident = f' id="{esc(id_)}"' if id_ else ""
    out = f"<table{ident}><thead><tr>{ths}</tr></thead><tbody>{trs}</tbody></table>"
    return f'<div class="scroll">{out}</div>' if scroll else out


def quadrant(q: str) -> str:
    """A coloured quadrant badge."""
    cls = f"q q{q}" if q in ("A", "B", "C", "D") else "q"
    return f'<span class="{cls}">{esc(q or "?")}</span>'
