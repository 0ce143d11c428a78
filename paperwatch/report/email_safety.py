"""Is an HTML document safe and fit to send as the HTML part of an email?

Mail clients are not browsers: Gmail drops ``<style>`` blocks in some apps and
clips messages over about 102 KB, Outlook renders with Word and shows no SVG,
and a message that pulls remote resources leaks that it was opened (and looks
like spam). The report must therefore carry its CSS inline, load nothing from
the network, run no script and stay small. :func:`check_email_safety` lists
every way a document breaks those rules; the tests run it on every rendered
report, and :func:`paperwatch.report.message.build_message` refuses HTML it objects to.

Sources of the rules: Gmail's supported CSS and clipping
(https://developers.google.com/gmail/design/css, "messages larger than 102KB
are clipped"), caniemail.com (SVG, ``<style>``, ``@media`` support), and the
OWASP XSS filter evasion cheat sheet (event handler attributes, ``javascript:``
URLs with embedded whitespace or entities).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

#: Largest HTML part, in UTF-8 bytes, that Gmail shows unclipped. Gmail documents
#: clipping "messages larger than 102KB"; 100,000 bytes keeps a margin for the
#: transfer encoding and for headers some clients count in.
MAX_HTML_BYTES = 100_000

#: Elements that have no place in an email (script, frames, plugins, forms, a base URL
#: that would redirect every link, a stylesheet link that loads from the network).
_FORBIDDEN_ELEMENTS = {
    "script": "script element",
    "noscript": "noscript element",
    "iframe": "iframe element",
    "frame": "frame element",
    "frameset": "frameset element",
    "object": "object element",
    "embed": "embed element",
    "applet": "applet element",
    "form": "form element",
    "base": "base element",
    "link": "link element (stylesheets and other resources must not load from the network)",
    "svg": "SVG (Gmail shows it partly, Outlook not at all; use HTML/CSS bars or a PNG via cid:)",
    "math": "MathML element",
}

#: Attributes whose value is a resource the client would fetch.
_RESOURCE_ATTRIBUTES = {"src", "srcset", "background", "poster", "data", "lowsrc", "dynsrc"}
#: Attributes whose value is a navigation target.
_LINK_ATTRIBUTES = {"href", "action", "formaction", "xlink:href", "cite", "longdesc"}
_LINK_SCHEMES = ("http:", "https:", "mailto:")
_INLINE_IMAGE = re.compile(r"^data:image/(png|jpeg|gif|webp)[;,]", re.IGNORECASE)

# Browsers drop ASCII tab/newline and ignore leading C0/space in URLs ("java\tscript:").
_URL_NOISE = re.compile(r"[\x00-\x20\x7f]+")
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_CSS_EXTERNAL_URL = re.compile(r"url\(\s*['\"]?\s*(?!data:image/(?:png|jpeg|gif|webp)|cid:)", re.I)
_CSS_DANGER = re.compile(r"@import|expression\s*\(|behavior\s*:|-moz-binding|javascript:", re.I)


@dataclass
class _Finding:
    message: str
    first_line: int
    count: int = 1


class _Scanner(HTMLParser):
    """Collects findings while the stdlib HTML parser walks the document."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.findings: dict[str, _Finding] = {}
        self._in_style = False
        self._style_line = 0
        self._style_text: list[str] = []

    def _add(self, message: str, line: int | None = None) -> None:
        line = self.getpos()[0] if line is None else line
        found = self.findings.get(message)
        if found is None:
            self.findings[message] = _Finding(message, line)
        else:
            found.count += 1

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        tag = tag.lower()
        if tag in _FORBIDDEN_ELEMENTS:
            self._add(_FORBIDDEN_ELEMENTS[tag])
        if tag == "meta" and any(
            k.lower() == "http-equiv" and (v or "").lower() == "refresh" for k, v in attrs
        ):
            self._add("meta refresh")
        if tag == "style":
            self._in_style = True
            self._style_line = self.getpos()[0]
            self._style_text = []
        names = {k.lower() for k, _ in attrs}
        if tag == "img" and "alt" not in names:
            self._add("img without alt text")
        for name, raw in attrs:
            self._check_attribute(tag, name.lower(), raw or "")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag.lower() == "style":
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag.lower() == "style" and self._in_style:
            self._in_style = False
            for problem in style_block_problems("".join(self._style_text)):
                self._add(problem, self._style_line)

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self._style_text.append(data)

    def _check_attribute(self, tag: str, name: str, value: str) -> None:
        url = _URL_NOISE.sub("", value).lower()
        if name.startswith("on"):
            self._add(f"event handler attribute {name}= on <{tag}>")
        elif name in _RESOURCE_ATTRIBUTES:
            if url.startswith("cid:") or _INLINE_IMAGE.match(url):
                return
            if url.startswith(("http:", "https:", "//", "ftp:")):
                self._add(f"external resource {name}= on <{tag}> (embed it and use cid:)")
            elif "svg" in url:
                self._add(f"SVG resource {name}= on <{tag}>")
            else:
                self._add(f"resource {name}= on <{tag}> that a mail client cannot load")
        elif name in _LINK_ATTRIBUTES:
            if tag not in {"a", "area"} or name != "href":
                self._add(f"{name}= on <{tag}> (only <a href> links are allowed)")
            elif not (url.startswith(_LINK_SCHEMES) or url.startswith("#")):
                scheme = url.split(":", 1)[0] + ":" if ":" in url else "a relative URL"
                self._add(f"link with {scheme} (only http, https and mailto links are allowed)")
        elif name == "style":
            for problem in _css_value_problems(value):
                self._add(f"{problem} in a style attribute of <{tag}>")


def _css_value_problems(css: str) -> list[str]:
    css = _CSS_COMMENT.sub("", css)
    problems = []
    if _CSS_EXTERNAL_URL.search(css):
        problems.append("url() loading an external resource")
    danger = _CSS_DANGER.search(css)
    if danger:
        problems.append(f"CSS {danger.group(0).strip().rstrip('(:').strip()}")
    return problems


def split_css_rules(css: str) -> list[tuple[str, str]]:
    """Split a stylesheet into its top-level rules.

    Args:
        css: stylesheet text (comments are dropped).

    Returns:
        ``(prelude, block)`` pairs in order: ``prelude`` is the selector or at-rule head
        (``"@media (max-width: 480px)"``, ``"p"``) stripped of whitespace, ``block`` the text
        between its outermost braces (``""`` for a statement at-rule such as ``@import ...;``,
        whose whole text is the prelude). Braces inside quoted strings are respected; an
        unterminated block runs to the end.
    """
    css = _CSS_COMMENT.sub("", css)
    rules: list[tuple[str, str]] = []
    i, n = 0, len(css)
    start = 0
    while i < n:
        ch = css[i]
        if ch in "\"'":
            i = _skip_string(css, i)
            continue
        if ch == ";" and css[start:i].strip().startswith("@"):
            rules.append((css[start:i].strip(), ""))
            start = i + 1
        elif ch == "{":
            prelude = css[start:i].strip()
            depth, j = 1, i + 1
            while j < n and depth:
                if css[j] in "\"'":
                    j = _skip_string(css, j)
                    continue
                depth += {"{": 1, "}": -1}.get(css[j], 0)
                j += 1
            rules.append((prelude, css[i + 1 : j - 1 if depth == 0 else n]))
            i = start = j
            continue
        i += 1
    tail = css[start:].strip()
    if tail:
        rules.append((tail, ""))
    return rules


def _skip_string(css: str, i: int) -> int:
    quote, j = css[i], i + 1
    while j < len(css) and css[j] != quote:
        j += 2 if css[j] == "\\" else 1
    return j + 1


def style_block_problems(css: str) -> list[str]:
    """Problems of the text of a ``<style>`` element left in an email.

    After inlining only ``@media`` rules may stay in a ``<style>`` block (they cannot be
    inlined, and clients that drop the block still get the inlined layout); every other
    rule is reported, as is an external ``url()`` or ``@import`` inside a media rule.

    Returns:
        Human-readable problems, empty when the block is fine.
    """
    problems = []
    for prelude, block in split_css_rules(css):
        if not prelude.lower().startswith("@media"):
            head = " ".join(prelude.split())[:60]
            problems.append(f"<style> rule other than @media left after inlining: {head!r}")
            continue
        problems.extend(f"{p} inside {prelude[:60]!r}" for p in _css_value_problems(block))
    return problems


def keep_media_rules(css: str) -> str:
    """Return only the ``@media`` rules of a stylesheet that load nothing, one per line.

    Used on the ``<style>`` block the CSS inliner keeps; everything else (``@import``,
    ``@font-face``, selectors that could not be inlined, media rules with external
    ``url()``) is dropped.
    """
    kept = [
        f"{' '.join(prelude.split())} {{{block.strip()}}}"
        for prelude, block in split_css_rules(css)
        if prelude.lower().startswith("@media") and not _css_value_problems(block)
    ]
    return "\n".join(kept)


def check_email_safety(html: str, *, max_bytes: int | None = MAX_HTML_BYTES) -> list[str]:
    """List the reasons an HTML document is unsafe or unfit as the HTML part of an email.

    Checked: ``<script>`` and other active or embedding elements (iframe, object, embed,
    form, base, link, meta refresh); ``on*`` event handler attributes; ``<style>`` content
    other than ``@media`` rules; resources loaded from anywhere but ``cid:`` or an inline
    ``data:image/(png|jpeg|gif|webp)`` (``src=http...``, ``background=``, CSS ``url(http...)``,
    ``@import``, CSS ``expression()``); links other than ``http:``, ``https:``, ``mailto:``
    and ``#fragment`` (``javascript:`` is caught even with embedded whitespace or
    entities); SVG; images without ``alt``; size over ``max_bytes``. Escaped text
    (``&lt;script&gt;``) is text and is not reported.

    Args:
        html: the document as it will be sent (after CSS inlining).
        max_bytes: limit on the UTF-8 size; ``None`` skips the size check.
            Default :data:`MAX_HTML_BYTES` (Gmail clips larger messages).

    Returns:
        One string per distinct problem, in document order, with the line of its first
        occurrence and how often it occurs; empty when the document is fine.
    """
    scanner = _Scanner()
    scanner.feed(html)
    scanner.close()
    problems = []
    for found in scanner.findings.values():
        times = f", {found.count} times" if found.count > 1 else ""
        problems.append(f"{found.message} (line {found.first_line}{times})")
    size = len(html.encode("utf-8"))
    if max_bytes is not None and size > max_bytes:
        problems.append(
            f"HTML is {size:,} bytes, over the {max_bytes:,}-byte limit (Gmail clips it): "
            "cut long lists and attach the full report"
        )
    return problems
