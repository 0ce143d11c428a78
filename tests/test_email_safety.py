"""The email-safety checker on good and bad HTML."""

from __future__ import annotations

import pytest

from paperwatch.report.email_safety import (
    MAX_HTML_BYTES,
    check_email_safety,
    keep_media_rules,
    split_css_rules,
    style_block_problems,
)

EXTERNAL = "(embed it and use cid:)"
SVG = "SVG (Gmail shows it partly, Outlook not at all; use HTML/CSS bars or a PNG via cid:)"
LEFT = "<style> rule other than @media left after inlining:"

GOOD = (
    "<!DOCTYPE html><html><head><style>@media (max-width: 480px) { table { width: 100% } }</style>"
    '</head><body><table width="640" style="background: #fff">'
    '<tr><td><a href="https://github.com/x/y">code</a> <a href="mailto:l@example.org">mail</a> '
    '<a href="#new">new</a> <img src="cid:chart" alt="chart"> '
    '<img src="data:image/png;base64,iVBORw0KGgo=" alt="">'
    "&lt;script&gt;alert(1)&lt;/script&gt; javascript:alert(1) url(http://x)</td></tr>"
    "</table></body></html>"
)


def test_a_clean_report_has_no_problems():
    assert check_email_safety(GOOD) == []


@pytest.mark.parametrize(
    ("html", "problems"),
    [
        ("<p>x</p><script>alert(1)</script>", ["script element (line 1)"]),
        ("<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
         ["script element (line 1)", f"external resource src= on <script> {EXTERNAL} (line 1)"]),
        ("<style>p { color: red }</style>",
         [f"{LEFT} 'p' (line 1)"]),
        ("<style>@import url(https://fonts.example.org/a.css);</style>",
         [f"{LEFT} '@import url(https://fonts.example.org/a.css)' (line 1)"]),
        ("<style>@media print { p { background: url(https://t.example/p.gif) } }</style>",
         ["url() loading an external resource inside '@media print' (line 1)"]),
        ('<img src="http://t.example/p.gif" alt="">',
         ["external resource src= on <img> (embed it and use cid:) (line 1)"]),
        ('<td background="https://x.example/bg.png">',
         ["external resource background= on <td> (embed it and use cid:) (line 1)"]),
        ('<div style="background-image: url( \'//x.example/a.png\' )">',
         ["url() loading an external resource in a style attribute of <div> (line 1)"]),
        ('<div style="width: expression(alert(1))">',
         ["CSS expression in a style attribute of <div> (line 1)"]),
        ('<link rel="stylesheet" href="https://cdn.example/x.css">',
         ["link element (stylesheets and other resources must not load from the network) (line 1)",
          "href= on <link> (only <a href> links are allowed) (line 1)"]),
        ('<svg width="10"><rect/></svg>',
         [f"{SVG} (line 1)"]),
        ('<img src="data:image/svg+xml;base64,PHN2Zz4=" alt="x">',
         ["SVG resource src= on <img> (line 1)"]),
        ('<img src="cid:a">', ["img without alt text (line 1)"]),
        ('<a href="jav&#x61;&#9;script:alert(1)">x</a>',
         ["link with javascript: (only http, https and mailto links are allowed) (line 1)"]),
        ('<a href=" JAVASCRIPT:alert(1)">x</a><a href="data:text/html,x">y</a>',
         ["link with javascript: (only http, https and mailto links are allowed) (line 1)",
          "link with data: (only http, https and mailto links are allowed) (line 1)"]),
        ('<a href="report.html">full report</a>',
         ["link with a relative URL (only http, https and mailto links are allowed) (line 1)"]),
        ('<img src="x" alt="" onerror="alert(1)">',
         ["resource src= on <img> that a mail client cannot load (line 1)",
          "event handler attribute onerror= on <img> (line 1)"]),
        ("<iframe src=\"https://x.example\"></iframe><form action=\"https://x.example\"></form>",
         ["iframe element (line 1)",
          "external resource src= on <iframe> (embed it and use cid:) (line 1)",
          "form element (line 1)",
          "action= on <form> (only <a href> links are allowed) (line 1)"]),
        ('<meta http-equiv="refresh" content="0;url=https://x.example">',
         ["meta refresh (line 1)"]),
    ],
)  # fmt: skip
def test_bad_html_is_reported(html: str, problems: list[str]):
    assert check_email_safety(html) == problems


def test_repeated_problems_are_counted_once_with_first_line():
    html = "<p>ok</p>\n" + "\n".join('<img src="cid:x">' for _ in range(3))
    assert check_email_safety(html) == ["img without alt text (line 2, 3 times)"]


def test_size_limit_is_in_utf8_bytes():
    just_under = "<p>" + "x" * (MAX_HTML_BYTES - 7) + "</p>"
    assert len(just_under.encode()) == MAX_HTML_BYTES
    assert check_email_safety(just_under) == []
    over = "<p>" + "论" * 33_333 + "</p>"  # 99,999 bytes of text + 7 of markup
    assert check_email_safety(over) == [
        "HTML is 100,006 bytes, over the 100,000-byte limit (Gmail clips it): "
        "cut long lists and attach the full report"
    ]
    assert check_email_safety(over, max_bytes=None) == []


def test_split_css_rules_respects_nesting_strings_and_comments():
    css = (
        '/* c { } */ p { content: "}" } @import url(a.css);'
        "@media (max-width: 480px) { a { b: c } d { e: f } } @font-face { src: x }"
    )
    assert split_css_rules(css) == [
        ("p", ' content: "}" '),
        ("@import url(a.css)", ""),
        ("@media (max-width: 480px)", " a { b: c } d { e: f } "),
        ("@font-face", " src: x "),
    ]


def test_keep_media_rules_and_style_block_problems():
    css = (
        "p{color:red} @media (max-width:480px){p{color:blue}} "
        "@media print{p{background:url(x.png)}}"
    )
    assert keep_media_rules(css) == "@media (max-width:480px) {p{color:blue}}"
    assert style_block_problems(keep_media_rules(css)) == []
    assert style_block_problems(css) == [
        "<style> rule other than @media left after inlining: 'p'",
        "url() loading an external resource inside '@media print'",
    ]
