"""The readers one by one (no database, no Prefect): what each maps from its library's tree,
what it refuses and where, and how a format is chosen."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperwatch.ingest import readers
from paperwatch.ingest.clean import clean_abstract
from paperwatch.ingest.readers import ReaderError, decide_format
from paperwatch.ingest.readers.bibtex import tex_escapes
from paperwatch.ingest.readers.markdown import decode_references
from paperwatch.ingest.readers.records import author_names, external_id

DATA = Path(__file__).parent / "data" / "formats"
ROUTERS, BIRDS, SHEETS = "80e45c64b6324e99", "5302f766e5b0d977", "4339e55a095e6ba4"
#: digest.md's introduction ("Papers our group picked this week, …"): an entry of its own.
INTRO = "089ac2128696d441"


def summary(name: str) -> list[tuple[object, ...]]:
    listing = readers.read((DATA / name).read_bytes(), name)
    return [
        (
            e.position,
            e.line,
            e.title,
            e.external_id,
            None if e.no_abstract else clean_abstract(e.text).paper_id,
        )
        for e in listing.entries
    ]


@pytest.mark.parametrize(
    ("name", "fmt", "ids"),
    [
        ("abstracts.txt", "lines", [ROUTERS, BIRDS, SHEETS]),
        ("digest.md", "markdown", [INTRO, ROUTERS, BIRDS, SHEETS, None]),
        ("papers.json", "json", [ROUTERS, BIRDS, SHEETS]),
        ("papers.jsonl", "jsonl", [ROUTERS, BIRDS, SHEETS, None]),
        ("papers.bib", "bibtex", [ROUTERS, BIRDS, SHEETS, None]),
        ("arxiv_api.atom", "feed", [ROUTERS, BIRDS]),
        ("arxiv_new.rss", "feed", [SHEETS]),
    ],
)
def test_every_format_gives_the_same_paper_ids(name: str, fmt: str, ids: list[str | None]) -> None:
    listing = readers.read((DATA / name).read_bytes(), name)
    assert listing.format == fmt
    assert [row[4] for row in summary(name)] == ids


def test_markdown_digest_fields_and_dropped_blocks() -> None:
    listing = readers.read((DATA / "digest.md").read_bytes(), "digest.md")
    assert listing.header is not None and (listing.header.venue, listing.header.year) == (
        "NeurIPS",
        2026,
    )
    intro, first, second, third, fourth = listing.entries
    # The introduction above the first paper is an entry (validation quarantines it).
    assert (intro.line, intro.title, intro.text) == (
        3,
        None,
        "Papers our group picked this week, newest first.",
    )
    assert (first.listed_number, first.line, first.authors, first.url) == (
        1,
        5,
        ("Mira Okafor", "Tomás Lindqvist"),
        "https://arxiv.org/abs/2611.04521",
    )
    # The <details> block (with a BibTeX code block) is not part of the abstract.
    assert first.text.endswith(
        "GateLock cuts forgetting by 41% while adding under 2% training time."
    )
    assert "@inproceedings" not in " ".join(e.text for e in listing.entries)
    assert len(first.line_breaks) == 3  # four source lines, joined
    assert second.external_id == "arXiv:2611.05873"  # from a block quote's paper, v2 dropped
    assert third.text.startswith("Spreadsheets mix")  # under an "#### Abstract" heading
    assert (fourth.no_abstract, fourth.text, fourth.external_id) == (
        True,
        "Position: Reviewers Should See the Code",
        "openreview:Rv7qPz2Kw1",
    )


def test_markdown_fields_right_above_a_rule_are_fields_not_a_heading() -> None:
    # The README's example: labelled lines, then "---" with no blank line between,
    # which CommonMark alone reads as a setext heading of all three fields.
    text = (
        "# ICML 2026 reading digest\n\n"
        "## [1] Quiet Gradients for Noisy Labels\n"
        "**Authors:** Hana Sato, Pedro Alves\n"
        "**Link:** https://arxiv.org/abs/2612.00101\n"
        "**Abstract:** Crowd labels are noisy. We propose QuietGrad, a reweighting rule.\n"
        "---\n"
        "## [2] Tables That Explain Themselves\n"
        "**Authors:** Lena Fischer\n"
        "**Abstract:** Spreadsheet headers hide meaning. We expand their abbreviations.\n"
        "---\n"
        "Plain Setext Title\n"
        "---\n"
        "Its abstract, under a heading that is not a field.\n"
    )
    listing = readers.read(text.encode(), "digest.md")
    assert listing.format == "markdown"
    assert [
        (e.position, e.line, e.listed_number, e.title, e.authors, e.url, e.external_id, e.text)
        for e in listing.entries
    ] == [
        (
            1,
            3,
            1,
            "Quiet Gradients for Noisy Labels",
            ("Hana Sato", "Pedro Alves"),
            "https://arxiv.org/abs/2612.00101",
            "arXiv:2612.00101",
            "Crowd labels are noisy. We propose QuietGrad, a reweighting rule.",
        ),
        (
            2,
            8,
            2,
            "Tables That Explain Themselves",
            ("Lena Fischer",),
            None,
            None,
            "Spreadsheet headers hide meaning. We expand their abbreviations.",
        ),
        (
            3,
            12,
            None,
            "Plain Setext Title",
            (),
            None,
            None,
            "Its abstract, under a heading that is not a field.",
        ),
    ]


def test_bibtex_skips_proceedings_and_handles_tex() -> None:
    listing = readers.read((DATA / "papers.bib").read_bytes(), "papers.bib")
    assert [e.title for e in listing.entries] == [
        "Sparse Routers Forget Less",
        "Counting Birds from Sound with Weak Labels",
        "A Benchmark for Tabular Question Answering in Spreadsheets",
        "Position: Reviewers Should See the Code",
    ]
    assert listing.entries[0].authors == ("Mira Okafor", "Tomás Lindqvist")
    assert "41% while" in listing.entries[0].text  # \% is a per cent sign
    assert listing.entries[2].external_id == "arXiv:2611.06002"  # arXiv's DOI is its arXiv id
    assert tex_escapes(r"M{\"u}ller \'{e}t\'e {\v{c}}, 5\% \& \_x") == "Müller été č, 5% & _x"


def test_bibtex_block_that_does_not_parse_names_its_line() -> None:
    text = "@article{a, title={Fine}, abstract={Text.}}\n\n@article{b, title={Broken\n"
    with pytest.raises(ReaderError) as caught:
        readers.read_text("bibtex", text, "x.bib")
    assert caught.value.line == 3
    assert str(caught.value).startswith("cannot be read as BibTeX: line 3: ")


def test_python_literal_jsonl_is_read_with_literal_eval() -> None:
    listing = readers.read((DATA / "python_repr.jsonl").read_bytes(), "python_repr.jsonl")
    assert listing.format_note == "lines read as Python literals (ast.literal_eval, literals only)"
    assert [(e.line, e.title) for e in listing.entries] == [
        (1, "Sparse Routers Forget Less"),
        (2, "Counting Birds from Sound with Weak Labels"),
    ]


def test_python_literal_after_a_json_line_is_refused_with_that_reason() -> None:
    text = "{\"abstract\": \"x\"}\n{'abstract': 'y'}\n"
    with pytest.raises(ReaderError) as caught:
        readers.read(text.encode(), "mixed.jsonl")
    assert str(caught.value) == (
        "cannot be read as JSON Lines: line 2: a Python literal (a dict printed with single "
        "quotes), not JSON: write the records with json.dumps"
    )


def test_json_syntax_errors_and_non_records_name_the_line() -> None:
    with pytest.raises(ReaderError) as caught:
        readers.read_text("json", '[\n {"abstract": "x"},\n {"abstract": }\n]', "a.json")
    assert str(caught.value) == "cannot be read as JSON: line 3: Expecting value (column 15)"
    with pytest.raises(ReaderError) as caught:
        readers.read_text("jsonl", '{"abstract": "x"}\n["a list"]\n', "a.jsonl")
    assert (
        str(caught.value)
        == "cannot be read as JSON Lines: line 2: a JSON list, not a record (an object)"
    )


def test_feed_that_is_not_a_feed_or_not_well_formed() -> None:
    with pytest.raises(ReaderError, match="without a <feed>, <rss> or <rdf:RDF> root"):
        readers.read(b'<?xml version="1.0"?><catalog><book/></catalog>', "books.xml")
    with pytest.raises(ReaderError) as caught:
        readers.read(
            b'<?xml version="1.0"?>\n<feed xmlns="http://www.w3.org/2005/Atom">\n<entry>\n',
            "x.atom",
        )
    assert caught.value.line == 4


def test_a_feed_whose_entities_nest_names_its_declarations() -> None:
    nested = (
        b'<?xml version="1.0"?>\n<!DOCTYPE rss [<!ENTITY a "aa"><!ENTITY b "&a;&a;">]>\n'
        b'<rss version="2.0"><channel><item><title>T &b;</title></item></channel></rss>'
    )
    with pytest.raises(ReaderError, match=r"the feed declares entities \(<!ENTITY") as caught:
        readers.read(nested, "x.rss")
    assert caught.value.line == 2


def test_an_html_feed_title_is_read_as_text() -> None:
    atom = (
        b'<?xml version="1.0"?>\n<feed xmlns="http://www.w3.org/2005/Atom"><title>ICLR 2026'
        b'</title>\n<entry><id>x</id><title type="html">R&amp;amp;D &amp;lt;b&amp;gt; at scale'
        b"</title><summary>We study graphs of many kinds.</summary></entry></feed>"
    )
    assert [e.title for e in readers.read(atom, "x.atom").entries] == ["R&D <b> at scale"]


@pytest.mark.parametrize(
    ("name", "text", "decision"),
    [
        ("a.md", "anything", ("markdown", "by extension (.md)")),
        ("a.txt", "ICLR 2025\n\nAn abstract.", ("text", "by content: paragraphs of text")),
        ("a.txt", '{"abstract": "x"}\n{"abstract": "y"}\n', ("jsonl", "by content: JSON Lines")),
        ("a.txt", '[{"abstract": "x"}]', ("json", "by content: JSON")),
        ("a.txt", "% refs\n@article{a, title={T}}\n", ("bibtex", "by content: BibTeX")),
        (
            "a.txt",
            "<?xml version='1.0'?>\n<rss version='2.0'/>",
            ("feed", "by content: an Atom or RSS feed"),
        ),
        ("a.txt", "<html><body>hi</body></html>", ("text", "by content: paragraphs of text")),
    ],
)
def test_format_decisions(name: str, text: str, decision: tuple[str, str]) -> None:
    found = decide_format(name, text)
    assert (found.format, found.reason) == decision


def test_pins_by_folder_and_glob_longest_wins() -> None:
    pins = {"digests": "markdown", "digests/raw/*.txt": "lines"}
    assert decide_format("digests/w48.txt", "x", pins).format == "markdown"
    assert decide_format("digests/raw/w48.txt", "x", pins).reason == (
        "pinned by the formats setting ('digests/raw/*.txt')"
    )
    assert decide_format("other/w48.md", "x", pins).format == "markdown"


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"arxiv": "arXiv:2611.01234v3"}, "arXiv:2611.01234"),
        ({"arxiv": "cs/0112017v1"}, "arXiv:cs/0112017"),
        ({"urls": ["https://arxiv.org/pdf/2611.01234v2"]}, "arXiv:2611.01234"),
        ({"doi_value": "https://doi.org/10.5555/ABC.12"}, "doi:10.5555/abc.12"),
        ({"doi_value": "10.48550/arXiv.2611.01234"}, "arXiv:2611.01234"),
        ({"urls": ["https://openreview.net/forum?id=Ab_c-1"]}, "openreview:Ab_c-1"),
        ({"urls": ["https://example.org/paper/17"]}, None),
    ],
)
def test_external_ids_are_normalised(kwargs: dict[str, object], expected: str | None) -> None:
    assert external_id(**kwargs) == expected  # type: ignore[arg-type]


# Shapes found in public repositories (a static-site paper page, a numbered Chinese digest,
# a PMLR volume), rewritten as small fixtures in our own words.
FOUND = Path(__file__).parent / "data" / "formats_found"


def test_found_paper_page_with_front_matter_toolbar_and_two_abstracts() -> None:
    [entry] = readers.read((FOUND / "paper_page.md").read_bytes(), "paper_page.md").entries
    # Front matter is not a paper; the toolbar's link is the URL; of the translated and the
    # original abstract sections, the original is the abstract.
    assert (entry.title, entry.url, entry.external_id, entry.line) == (
        "Sparse Routers Forget Less",
        "https://arxiv.org/abs/2611.04521",
        "arXiv:2611.04521",
        6,
    )
    assert entry.authors == ("Mira Okafor", "Tomás Lindqvist")
    assert clean_abstract(entry.text).paper_id == ROUTERS


def test_found_numbered_digest_with_chinese_labels() -> None:
    listing = readers.read((FOUND / "numbered_digest_zh.md").read_bytes(), "digest.md")
    assert [(e.listed_number, e.title, e.external_id, e.text[:12]) for e in listing.entries] == [
        (1, "稀疏路由器遗忘更少", "arXiv:2611.04521", "专家混合模型在窄任务上微"),
        (2, "从声音中数鸟：弱标签下的计数", "arXiv:2611.05873", "声学监测站记录了数千小时"),
    ]


def test_found_pmlr_volume() -> None:
    listing = readers.read((FOUND / "pmlr_volume.bib").read_bytes(), "pmlr_volume.bib")
    assert listing.header is not None and listing.header.text == "ICML 2026"
    first, second = listing.entries
    assert first.title == "Sparse Routers Forget Less: GateLock for Continual Mixture-of-Experts"
    assert first.authors == ("Mira Okafor", "Tomás Lindqvist", "José Hernández-Ruiz")
    assert clean_abstract(first.text).paper_id == ROUTERS
    assert (second.no_abstract, second.url) == (
        True,
        "https://proceedings.mlr.press/v301/brandt26b.html",
    )


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("Lee, Ann and Moreau, Émilie", ("Ann Lee", "Émilie Moreau")),
        ("Lee, Ann; Moreau, Émilie", ("Ann Lee", "Émilie Moreau")),
        ("Lee, Ann", ("Ann Lee",)),
        ("Lee, A. & Li, B.", ("A. Lee", "B. Li")),
        ("Ann Lee, Bo Li and Cy Dee", ("Ann Lee", "Bo Li", "Cy Dee")),
        ("Ann Lee, Bo Li", ("Ann Lee", "Bo Li")),
        ("Ann Lee and Bo Li", ("Ann Lee", "Bo Li")),
        (["Lee, Ann"], ("Lee, Ann",)),  # a list holds names as given
        ({"name": "Ann Lee"}, ("Ann Lee",)),  # one author as an object, not in a list
        ({"given": "Ann", "family": "Lee"}, ("Ann Lee",)),
    ],
)
def test_names_written_last_first_are_turned_round(value: object, names: tuple[str, ...]) -> None:
    """A string of ``Last, First`` names (BibTeX's way, also seen in JSON, Markdown and RSS
    digests) gives the names a reader follows (``Ann Lee``), not four half-names."""
    assert author_names(value) == names


def test_lone_surrogate_escapes_are_replaced_and_said(tmp_path: Path) -> None:
    """JSON may write ``"\\ud800"``, which no text encoding holds: each becomes U+FFFD with a
    field fault, and the file prepares and validates as any other (it used to fail the whole
    file with an internal UnicodeEncodeError, and `paperwatch docs` with a traceback)."""
    from paperwatch.ingest.files import prepare_file, scan_folder
    from paperwatch.ingest.frames import entries_frame
    from paperwatch.ingest.readers.records import SURROGATE_FAULT

    abstract = "We study how listings are read when a record holds an escape that is no text. " * 2
    path = tmp_path / "s.json"
    records = f'[{{"title": "x\\ud800", "abstract": "{abstract}"}},\n'
    records += f' {{"title": "ok", "abstract": "{abstract} again"}}]'
    path.write_text(records, encoding="utf-8")
    (stat,) = scan_folder(tmp_path).files
    prepared = prepare_file(stat, path.read_bytes())
    first, second = prepared.entries
    assert (first.title, first.field_faults) == ("x\ufffd", (SURROGATE_FAULT,))
    assert (second.title, second.field_faults) == ("ok", ())
    frame = entries_frame([prepared])
    assert frame.height == 2
    assert frame["field_faults"].to_list() == [SURROGATE_FAULT, None]


def test_json_fields_that_are_not_text_are_left_out_and_said() -> None:
    """An abstract written as a list of paragraphs is joined; a title that is an object is
    left out with a field fault (it used to become its Python repr, ``{'nested': …}``)."""
    words = "We study records whose fields are written in other JSON types than text."
    text = (
        f'[{{"title": {{"nested": [1, 2]}}, "abstract": ["{words}", "{words}"]}},\n'
        f' {{"title": "Plain", "abstract": ["{words}", 3]}}]'
    )
    first, second = readers.read_text("json", text, "t.json").entries
    assert (first.title, first.text) == (None, f"{words} {words}")
    assert first.field_faults == ("title: a JSON dict, not text; left out",)
    assert (second.title, second.no_abstract) == ("Plain", True)
    assert second.field_faults == ("abstract: a JSON list, not text; left out",)


def test_a_markdown_abstract_in_an_html_or_code_block_is_not_lost() -> None:
    """A paper whose only text is an HTML block or a code block gets that text (tags
    stripped); a paper with an abstract of its own keeps it (a BibTeX fence beside it is
    no abstract). Both used to leave only the title, and the text was stored nowhere."""
    words = "We study a thing that is written inside a block of the digest, not a paragraph."
    text = (
        f"# Digest\n\n## Paper A\n\n<div>{words}</div>\n\n## Paper B\n\n```\n{words}\n```\n\n"
        f"## Paper C\n\n{words}\n\n```bibtex\n@article{{c, title={{C}}}}\n```\n"
    )
    a, b, c = readers.read_text("markdown", text, "d.md").entries
    assert [(e.title, e.text, e.line) for e in (a, b, c)] == [
        ("Paper A", words, 3),
        ("Paper B", words, 7),
        ("Paper C", words, 13),
    ]


def test_every_array_of_records_in_a_json_object_is_read() -> None:
    """``{"papers": […], "notes": […]}``: both arrays are records (the second used to be
    neither loaded nor quarantined); an array of other values beside them is not read."""
    words = "We study a JSON object that holds its records under two documented keys."
    text = (
        f'{{"papers": [{{"abstract": "{words} One."}}],\n'
        f' "data": [1, 2],\n'
        f' "notes": [{{"abstract": "{words} Two."}}]}}'
    )
    entries = readers.read_text("json", text, "two.json").entries
    assert [(e.line, e.text[-4:]) for e in entries] == [(1, "One."), (3, "Two.")]


def test_markdown_prose_before_the_first_heading_is_read_not_dropped() -> None:
    """Prose that stands before a digest's first paper (a paper described in a paragraph,
    a list item, the digest's own introduction) is an entry of its own, one per block:
    validation then loads what is an abstract and quarantines the rest with its reason and
    line. It used to vanish. The header heading below it is still the header."""
    described = (
        "We train the tokenizer together with the language model, so that rare domain terms "
        "keep a single piece; on four benchmarks this halves the error on unseen words."
    )
    text = (
        "Our picks of the week.\n\n"
        f"{described}\n\n"
        "- Slides from the group meeting are in the shared folder.\n\n"
        "# ICLR 2027 reading digest\n\n"
        "A note on this section only.\n\n"
        "## [1] Quiet Gradients for Noisy Labels\n\n"
        "**Abstract:** Crowd labels are noisy. We reweight examples by annotator agreement.\n"
    )
    listing = readers.read_text("markdown", text, "d.md")
    assert listing.header is not None and listing.header.text == "ICLR 2027 reading digest"
    assert [(e.position, e.line, e.title, e.text) for e in listing.entries] == [
        (1, 1, None, "Our picks of the week."),
        (2, 3, None, described),
        (3, 5, None, "Slides from the group meeting are in the shared folder."),
        (4, 9, None, "A note on this section only."),
        (
            5,
            11,
            "Quiet Gradients for Noisy Labels",
            "Crowd labels are noisy. We reweight examples by annotator agreement.",
        ),
    ]


def test_prose_before_the_first_bold_title_paper_is_an_entry() -> None:
    """In a digest of bold-title blocks the blocks before the first paper are one entry,
    as the blocks between two list-item papers are (they used to vanish)."""
    text = (
        "Collected by the reading group.\n\n"
        "Send suggestions by mail.\n\n"
        "- **Sparse Routers Forget Less in Practice** [PDF](https://arxiv.org/abs/2611.04521)\n"
        "    - Routers keep old skills when their assignments are held close to the start.\n"
        "- **Counting Birds From Sound Alone** [PDF](https://arxiv.org/abs/2611.05873)\n"
        "    - Day-level labels are enough to count calls in forest recordings.\n"
    )
    entries = readers.read_text("markdown", text, "d.md").entries
    assert [(e.line, e.title, e.text) for e in entries] == [
        (1, None, "Collected by the reading group. Send suggestions by mail."),
        (
            5,
            "Sparse Routers Forget Less in Practice",
            "Routers keep old skills when their assignments are held close to the start.",
        ),
        (
            7,
            "Counting Birds From Sound Alone",
            "Day-level labels are enough to count calls in forest recordings.",
        ),
    ]


def test_markdown_character_references_are_decoded_as_commonmark_does() -> None:
    """``&amp;``, ``&lt;``, ``&#39;``, ``&nbsp;``, ``&eacute;``, … in a paper's fields and
    abstract are the characters they stand for, as in the heading's title (markdown-it
    decodes those); a reference that names nothing stays as written, and so does one in
    a code span, behind a backslash, or in a code block (CommonMark decodes none of
    those). A reference for a line break is a space. They used to stay as written."""
    text = (
        "# Digest\n\n"
        "## [1] Q&amp;A over Tables &mdash; Revisited\n"
        "**Authors:** Ana P&eacute;rez, Bo Li &amp; Cy Dee\n"
        "**Link:** https://arxiv.org/abs/2612.00200?v=1&amp;w=2\n"
        "**Abstract:** Questions &amp; answers fail when a cell holds &lt;b&gt; or x &lt; y;\n"
        "we&#39;re on it&nbsp;now &#x2014; see `a &amp; b`, \\&amp; and &madeup; too.&#10;Done.\n\n"
        "## [2] Code Stays Code\n\n"
        "```\nwhile a &amp;&amp; b: pass\n```\n"
    )
    first, second = readers.read_text("markdown", text, "d.md").entries
    assert (first.title, first.authors, first.url) == (
        "Q&A over Tables — Revisited",
        ("Ana Pérez", "Bo Li", "Cy Dee"),
        "https://arxiv.org/abs/2612.00200?v=1&w=2",
    )
    assert first.text == (
        # &nbsp; is U+00A0, which the entry's white space is collapsed to one space from
        "Questions & answers fail when a cell holds <b> or x < y; we're on it now — "
        "see `a &amp; b`, \\&amp; and &madeup; too. Done."
    )
    assert len(first.line_breaks) == 1  # two source lines; the decoded &#10; is no break
    assert decode_references("a&nbsp;b &#0; &#X41;") == "a\xa0b \ufffd A"
    assert second.text == "while a &amp;&amp; b: pass"


def test_character_references_in_markdown_html_details_and_tables_are_decoded() -> None:
    """The text of an HTML block and of a ``<details>`` abstract is HTML: its references
    are decoded after its tags are removed (a decoded ``&lt;`` makes no tag). A table
    cell's abstract is Markdown."""
    words = "We study graphs &amp; trees, where a node &lt;em&gt;x&lt;/em&gt; has one parent."
    text = (
        f"# Digest\n\n## Paper A\n\n<div>{words}</div>\n\n"
        f"## Paper B\n\n<details><summary>Abstract</summary>\n{words}\n</details>\n"
    )
    decoded = "We study graphs & trees, where a node <em>x</em> has one parent."
    a, b = readers.read_text("markdown", text, "d.md").entries
    assert [(e.title, e.text) for e in (a, b)] == [("Paper A", decoded), ("Paper B", decoded)]
    table = f"| Title | Abstract |\n|---|---|\n| Q&amp;A | {words} |\n"
    [row] = readers.read_text("markdown", table, "t.md").entries
    assert (row.title, row.text) == ("Q&A", decoded)


JSON_WORDS = "We study a JSON digest that files its records under topics and ids, not in arrays."


def test_json_records_in_objects_keyed_by_topic_and_id_are_read_at_their_lines() -> None:
    """``{topic: {id: record}}`` (a digest generator's export): every record is a paper at
    the line its object starts, in file order; a topic may hold an array of records."""
    text = (
        "{\n"
        ' "Matching": {\n'
        f'  "2611.43001": {{"paper_title": "One", "paper_abstract": "{JSON_WORDS} One."}},\n'
        f'  "2611.43002": {{"paper_title": "Two", "paper_abstract": "{JSON_WORDS} Two."}}\n'
        " },\n"
        f' "Depth": [{{"title": "Three", "abstract": "{JSON_WORDS} Three."}}]\n'
        "}\n"
    )
    entries = readers.read_text("json", text, "topics.json").entries
    assert [(e.position, e.line, e.title, e.text) for e in entries] == [
        (1, 3, "One", f"{JSON_WORDS} One."),
        (2, 4, "Two", f"{JSON_WORDS} Two."),
        (3, 6, "Three", f"{JSON_WORDS} Three."),
    ]


def test_a_json_object_with_a_record_field_or_a_plain_value_is_one_record() -> None:
    """An object is a map of records only when no key is a record field and every value is
    an object or an array of objects: OpenReview's wrapped fields (``{"title": {"value":
    …}}``, every value an object) and a topic map with a plain value beside it stay one
    record each (the second, with no abstract, is quarantined at its line)."""
    wrapped = (
        f'{{"title": {{"value": "Wrapped"}}, "abstract": {{"value": "{JSON_WORDS}"}}, '
        '"venue": {"value": "ICLR 2026"}}'
    )
    (entry,) = readers.read_text("json", wrapped, "one.json").entries
    assert (entry.line, entry.title, entry.text) == (1, "Wrapped", JSON_WORDS)
    mixed = f'\n{{"Matching": {{"1": {{"abstract": "{JSON_WORDS}"}}}}, "updated": "2026-11-20"}}'
    (entry,) = readers.read_text("json", mixed, "mixed.json").entries
    assert (entry.line, entry.text, entry.no_abstract) == (2, "", True)


def test_json_maps_are_read_three_levels_deep_then_the_object_is_one_record() -> None:
    """``{venue: {topic: {id: record}}}`` is read; one level more and the object at the
    fourth level is one record (no abstract: quarantined at its line, not dropped)."""
    record = f'{{"abstract": "{JSON_WORDS}"}}'
    three = f'{{"ICLR": {{"Depth": {{"2611.1": {record}}}}}}}'
    (entry,) = readers.read_text("json", three, "three.json").entries
    assert (entry.text, entry.no_abstract) == (JSON_WORDS, False)
    four = f'{{"2026": {{"ICLR": {{"Depth": {{"2611.1": {record}}}}}}}}}'
    (entry,) = readers.read_text("json", four, "four.json").entries
    assert (entry.line, entry.text, entry.no_abstract) == (1, "", True)


def test_a_json_array_of_records_is_found_at_its_own_key_not_a_nested_one() -> None:
    """The line of a record under ``"papers"`` comes from the object's own member: a nested
    ``"papers": []`` written before it (in ``meta``) used to be taken, giving line 1."""
    text = f'{{"meta": {{"papers": []}},\n "papers": [{{"abstract": "{JSON_WORDS}"}}]}}'
    (entry,) = readers.read_text("json", text, "meta.json").entries
    assert (entry.line, entry.text) == (2, JSON_WORDS)
