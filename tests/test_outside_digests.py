"""Digests in shapes paperwatch was not written against (tests/data/outside-digests/README.md):
what each must give, exactly. The shapes not read yet are xfail, strict, with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from paperwatch.ingest.clean import clean_abstract
from paperwatch.ingest.parse import Listing
from paperwatch.ingest.readers.markdown import read_text as read_markdown
from paperwatch.ingest.shapes import split_metadata_lines
from tests.digests import read_digest

DATA = Path(__file__).parent / "data" / "outside-digests"


def _read(name: str) -> tuple[str, Listing]:
    return read_digest(DATA / name)


def test_an_abstract_in_details_under_a_linked_heading() -> None:
    fmt, listing = _read("details_abstract_digest.md")
    assert fmt == "markdown"
    assert [(e.line, e.title, e.url) for e in listing.entries] == [
        (
            15,
            "Foggy Splats: Volumetric Scattering for Gaussian Scene Models",
            "http://arxiv.org/abs/2611.40001",
        ),
        (
            25,
            "Sparse Views, Dense Geometry: Priors for Few-Image Reconstruction",
            "http://arxiv.org/abs/2611.40002",
        ),
        (34, "Event Cameras Meet Radiance Fields at Night", "http://arxiv.org/abs/2611.40003"),
    ]
    first = listing.entries[0].text
    assert first.startswith("Gaussian scene models render clear air well")
    assert first.endswith("while keeping real-time frame rates.")
    assert "<" not in first and "comments" not in first.lower()
    assert [clean_abstract(e.text).word_count for e in listing.entries] == [82, 75, 75]


def test_the_plain_author_line_above_details_is_the_authors() -> None:
    _, listing = _read("details_abstract_digest.md")
    assert [e.authors for e in listing.entries] == [
        ("Mara Lind", "Tobias Frey", "Ayo Okafor"),
        ("Chen Wei", "Ilse Brandt"),
        ("Pedro Alves",),
    ]


def test_a_sentence_above_details_is_not_taken_for_authors() -> None:
    digest = (
        "## Rendering\n\n"
        "### [Haze Fields for Outdoor Scenes](http://arxiv.org/abs/2611.40011)\n"
        "Fog, Rain and Snow Are Modelled Together Here.\n"
        "<details>\n<summary>Abstract</summary>\n"
        "A single field models haze, rain and snow for outdoor scenes.\n</details>\n\n"
        "### [Night Driving Scenes from Events](http://arxiv.org/abs/2611.40012)\n"
        "Tobias Frey\n"
        "Ayo Okafor\n"
        "<details>\n<summary>Abstract</summary>\n"
        "Events sharpen night scenes recorded from a moving car.\n</details>\n"
    )
    listing = read_markdown(digest)
    assert [(e.title, e.authors) for e in listing.entries] == [
        ("Haze Fields for Outdoor Scenes", ()),  # a sentence, however capitalised
        ("Night Driving Scenes from Events", ()),  # two lines, not one line of names
    ]
    assert listing.entries[0].text.startswith("A single field models haze")


def test_hash_titles_with_one_line_fields_and_rules() -> None:
    fmt, listing = _read("hash_title_fields.md")
    assert fmt == "markdown"
    assert [(e.line, e.title, e.authors, e.url) for e in listing.entries] == [
        (
            1,
            "Budget Bots: Retrieval Assistants for Town Finance Questions",
            ("Ana Ruiz", "Ben Kole", "Chloe Tam"),
            "https://arxiv.org/pdf/2611.41001",
        ),
        (
            10,
            "Tuning, Prompting or Retrieval? A Comparison for Clinical Note Triage",
            ("Dev Patel", "Eva Novak"),
            "https://arxiv.org/pdf/2611.41002",
        ),
        (
            19,
            "Parametric Memory Patches for Test-Time Knowledge",
            ("Finn Berg", "Gina Hart", "Hugo Lam"),
            "https://arxiv.org/pdf/2611.41003",
        ),
    ]
    assert listing.entries[2].text.endswith("reduces answers that contradict the documents.")


def test_numbered_headings_with_the_abstract_a_paragraph_below_its_label() -> None:
    fmt, listing = _read("numbered_heading_fields.md")
    assert fmt == "markdown"
    assert [(e.line, e.listed_number, e.title, e.authors) for e in listing.entries] == [
        (
            1,
            0,
            "Shifting Latent Mechanisms for Cell Perturbation Models",
            ("Ines Moreau", "Jonas Vik"),
        ),
        (
            15,
            1,
            "Curricula Across Episodes for Sequence-Model Agents",
            ("Kai Dunn", "Lena Ortiz", "Milo Grant"),
        ),
        (29, 2, "Painting Masks: Segmentation Without Training", ("Nora Quist",)),
    ]
    assert listing.entries[0].text.startswith("Models of cells under perturbation")
    assert all("Conference" not in e.text for e in listing.entries)


def test_bold_titles_wrapped_over_two_lines_keep_the_space() -> None:
    fmt, listing = _read("pandoc_accepted_titles.md")
    assert fmt == "markdown"
    assert [(e.line, e.title, e.no_abstract) for e in listing.entries] == [
        (3, None, False),  # the notice above the papers: the digest's own prose
        (8, "Continuous Embeddings of Deformable Surfaces", True),
        (12, "Calibrating Classifiers by Trading Accuracy for Uncertainty", True),
        (16, "Image Generation from Five Examples by Self-Adaptation", True),
        (20, "Heavy Tails and Generalization in Deep Networks", True),
    ]


def test_a_daily_table_of_titles_gives_titles_without_abstracts() -> None:
    fmt, listing = _read("pipe_table_titles.md")
    assert fmt == "markdown"
    assert [(e.line, e.title, e.url, e.no_abstract) for e in listing.entries] == [
        (
            7,
            "Matching Features Across Seasons with Learned Priors",
            "http://arxiv.org/abs/2611.42001",
            True,
        ),
        (
            8,
            "Dense Correspondence for Thermal and Color Pairs",
            "http://arxiv.org/abs/2611.42002",
            True,
        ),
        (9, "A Benchmark of Matchers Under Motion Blur", "http://arxiv.org/abs/2611.42003", True),
    ]


def test_a_checkbox_list_gives_one_title_per_item() -> None:
    _, listing = _read("checkbox_title_list.md")
    assert [(e.title, e.no_abstract) for e in listing.entries] == [
        ("Auditing Privacy in a Single Training Run", True),
        ("Are Sudden Skills of Large Models an Artifact of Metrics?", True),
        ("Conditions for Global Convergence of Policy Gradients", True),
        ("Theorem Proving with Retrieval-Augmented Language Models", True),
    ]
    assert [e.authors for e in listing.entries] == [
        ("Ada Stone", "Bo Quinn", "Cy Marsh"),
        ("Dee Ford", "Eli Shaw"),
        ("Fay Lowe", "Gus Pratt", "Hal Reed"),
        ("Ivy Chu", "Jon Bell"),
    ]


def test_bullets_of_sentences_and_to_dos_beside_abstracts_are_not_titles() -> None:
    bullets = (
        "## Highlights of the week\n\n"
        "- Three groups revisit scaling laws for retrieval models.\n"
        "- A new benchmark measures robustness to typos in prompts.\n"
    )
    listing = read_markdown(bullets)
    assert [(e.title, e.no_abstract) for e in listing.entries] == [
        ("Highlights of the week", False)
    ]
    to_dos = (
        "## Sparse Probes for Language Model Features\n\n"
        "We train sparse linear probes on the activations of a language model and find "
        "that a few hundred features explain most of the variance in its outputs.\n\n"
        "- [ ] Read the appendix on probe training\n"
        "- [x] Try the released code on our model\n"
    )
    listing = read_markdown(to_dos)
    # The to-dos are the reader's own notes: entries of their own (quarantined as the
    # digest's prose), not titles and not lines of the abstract.
    assert [(e.line, e.title, e.text, e.outside_paper) for e in listing.entries] == [
        (1, "Sparse Probes for Language Model Features", listing.entries[0].text, False),
        (5, None, "[ ] Read the appendix on probe training", True),
        (6, None, "[x] Try the released code on our model", True),
    ]
    assert listing.entries[0].text.startswith("We train sparse linear probes")
    assert listing.entries[0].text.endswith("most of the variance in its outputs.")


def test_an_html_table_index_gives_titles_without_abstracts() -> None:
    _, listing = _read("html_table_index_zh.md")
    assert [(e.title, e.no_abstract) for e in listing.entries] == [
        (None, False),  # "📊 共 3 篇论文 | 🔗 1 篇有代码": the digest's own prose
        ("Fact Checking Images and Text Together with Language Models", True),
        ("Can Language Models Predict GPU Kernel Speed?", True),
        ("Open Guardrails for Tool-Using Agents", True),
    ]
    assert listing.entries[0].outside_paper
    # The one-line points (一句话要点) are not abstracts; relative links are no URLs.
    assert [(e.line, e.text, e.url) for e in listing.entries[1:]] == [
        (30, "Fact Checking Images and Text Together with Language Models", None),
        (37, "Can Language Models Predict GPU Kernel Speed?", None),
        (44, "Open Guardrails for Tool-Using Agents", None),
    ]


def test_an_html_table_of_something_else_gives_no_papers() -> None:
    schedule = (
        "<table>\n"
        "<tr><th>Time</th><th>Session</th><th>Room</th></tr>\n"
        "<tr><td>09:00</td><td>Opening remarks</td><td>Hall A</td></tr>\n"
        "<tr><td>09:30</td><td>Invited talk on sparse models</td><td>Hall A</td></tr>\n"
        "</table>\n"
    )
    assert read_markdown(schedule).entries == []
    # Under a paper's heading it stays that paper's HTML, as before: no row is a paper.
    under_heading = read_markdown("# Workshop day\n\n" + schedule).entries
    assert [(e.title, e.outside_paper) for e in under_heading] == [("Workshop day", False)]


def test_an_html_table_row_takes_its_links_and_only_the_text_of_its_title() -> None:
    table = (
        "<table>\n"
        "<tr><td>Title</td><td>Authors</td></tr>\n"
        '<tr><td><a href="https://arxiv.org/abs/2611.45001">Q&amp;A over <em>k</em>-NN'
        " Tables &amp;lt;b&amp;gt;</a><script>alert(1)</script></td>"
        "<td>Mara Lind, Chen Wei</td></tr>\n"
        "</table>\n"
    )
    [entry] = read_markdown(table).entries
    assert (entry.title, entry.authors, entry.url, entry.no_abstract) == (
        "Q&A over k-NN Tables &lt;b&gt;",
        ("Mara Lind", "Chen Wei"),
        "https://arxiv.org/abs/2611.45001",
        True,
    )


def test_a_read_time_newsletter_pairs_each_title_with_its_summary() -> None:
    fmt, listing = _read("tldr_read_time.txt")
    assert fmt == "text"
    titled = [(e.title, e.text.split(".")[0]) for e in listing.entries if e.title]
    assert titled == [
        (
            "Quiet Gradients Spot Divergence Early",
            "Researchers show that large-batch training can drift into divergence while the "
            "loss still falls, and propose a cheap monitor on the ratio of gradient norms "
            "between layers",
        ),
        (
            "Spreadsheets Are Graphs Too",
            "A new retrieval method treats the schema of a spreadsheet as a graph of headers, "
            "cells and formulas, and retrieves connected regions rather than rows",
        ),
        (
            "Why Small Models Forget Facts First",
            "A study of continued pretraining finds that small language models lose rare "
            "facts long before common ones, and that mixing a small replay buffer of the "
            "original data prevents most of the loss",
        ),
    ]
    assert listing.header is None or "November" not in listing.header.venue


def test_records_keyed_by_topic_and_id_are_papers() -> None:
    fmt, listing = _read("nested_topic_id.json")
    assert fmt == "json"
    assert [(e.title, e.authors, e.url) for e in listing.entries] == [
        (
            "Seasonal Priors for Long-Term Feature Matching",
            ("Kim Ode", "Lu Pena"),
            "http://arxiv.org/abs/2611.43001",
        ),
        (
            "Thermal to Color Correspondence Without Paired Labels",
            ("Max Roth",),
            "http://arxiv.org/abs/2611.43002",
        ),
        (
            "Rain-Robust Monocular Depth with Synthetic Droplets",
            ("Ned Olsen", "Pia Quill"),
            "http://arxiv.org/abs/2611.43003",
        ),
    ]
    assert listing.entries[2].text.startswith("Monocular depth networks misread raindrops")


@pytest.mark.xfail(
    strict=True,
    reason="table rows held as JSON strings (`{topic: {id: '|**date**|**Title**|…|'}}`) "
    "are not records: the JSON map rule reads objects (named fields), and a lone row's "
    "cells are unnamed (no header row in the file says which is the title), so the topic "
    "object is one record with no abstract, quarantined as 'no abstract' at line 1",
)
def test_table_rows_in_json_give_titles_without_abstracts() -> None:
    _, listing = _read("table_rows_in_json.json")
    assert [(e.title, e.url, e.no_abstract) for e in listing.entries] == [
        (
            "Seasonal Priors for Long-Term Feature Matching",
            "http://arxiv.org/abs/2611.44001",
            True,
        ),
        (
            "Thermal to Color Correspondence Without Paired Labels",
            "http://arxiv.org/abs/2611.44002",
            True,
        ),
    ]


def test_hugging_face_daily_papers_read_the_paper_object() -> None:
    fmt, listing = _read("hf_daily_papers.json")
    assert fmt == "json"
    assert [
        (e.line, e.title, e.authors, e.url, e.external_id, e.no_abstract) for e in listing.entries
    ] == [
        (
            2,
            "Draft Tokens Reused: Speculative Decoding Without a Second Model",
            ("Rosa Imre", "Tariq Bello"),
            "https://arxiv.org/abs/2611.45001",
            "arXiv:2611.45001",
            False,
        ),
        (
            20,
            "Counting Objects in Video with a Frozen Image Encoder",
            ("Yuki Sato",),
            "https://arxiv.org/abs/2611.45002",
            "arXiv:2611.45002",
            False,
        ),
    ]
    assert listing.entries[0].text.startswith("Speculative decoding needs a small draft model")
    assert listing.entries[1].text.endswith("with a twentieth of the training compute.")


def test_semantic_scholar_external_ids_name_the_paper() -> None:
    fmt, listing = _read("s2_search_response.json")
    assert fmt == "json"
    assert [(e.title, e.authors, e.external_id) for e in listing.entries] == [
        (
            "Tree Search over Proof Sketches for Olympiad Geometry",
            ("Hana Kovac", "Omar Said"),
            "arXiv:2611.46001",
        ),
        ("Soil Moisture Maps from Phone Cameras", ("Lucia Ferraz",), "doi:10.5555/demo.2026.117"),
    ]
    # The record's own link stays its URL; the id only names the paper.
    assert listing.entries[0].url == (
        "https://www.semanticscholar.org/paper/3f1c0b7e9a2d4c6b8e0f1a2b3c4d5e6f7a8b9c0d"
    )
    assert listing.entries[1].text.startswith("Farmers rarely own soil sensors")


def test_a_csl_json_export_keeps_its_capital_url() -> None:
    fmt, listing = _read("csl_json_export.json")
    assert fmt == "json"
    assert [(e.title, e.authors, e.url, e.external_id) for e in listing.entries] == [
        (
            "Learning Rate Warmup Explained by Curvature",
            ("Sara Lindqvist", "Thabo Mbeki"),
            "https://example.org/articles/warmup-curvature",
            "doi:10.5555/jos.2026.041",
        ),
        (
            "Shared Caches for Retrieval-Augmented Serving",
            ("Ada Okoro", "Pieter Van Dijk", "Li Chen"),
            "https://example.org/proceedings/shared-caches",
            None,
        ),
    ]
    assert listing.entries[0].text.startswith("Warmup is used in almost every large training run")


def test_an_arxiv_list_page_pairs_each_block_with_its_abstract() -> None:
    fmt, listing = _read("arxiv_list_page.txt")
    assert fmt == "text"
    papers = [e for e in listing.entries if e.title]
    assert [(e.line, e.title, e.authors, e.external_id, e.no_abstract) for e in papers] == [
        (
            5,
            "Tokenizers That Split Numbers Digit by Digit Count Better",
            ("Mira Solberg", "Ken Adeyemi", "Tomas Ruiz"),
            "arXiv:2611.47001",
            False,
        ),
        (
            13,
            "A Corpus of Courtroom Transcripts in Six Languages, Aligned by Hearing and Speaker",
            ("Lea Brunner",),
            "arXiv:2611.47002",
            False,
        ),
        (
            23,
            "Early Stopping for Preference Tuning by Held-Out Agreement",
            ("Jun Park", "Elif Demir"),
            "arXiv:2611.46877",
            False,
        ),
        (  # a replacement: the page gives no abstract
            33,
            "Small Dictionaries for Morphologically Rich Languages",
            ("Sofia Marquez",),
            "arXiv:2609.31544",
            True,
        ),
    ]
    assert papers[0].url == "https://arxiv.org/abs/2611.47001"
    assert papers[0].text.startswith("Language models that see multi-digit numbers")
    assert all("Subjects" not in e.text and "arXiv:" not in e.text for e in listing.entries)
    # The page's own lines stay entries of their own (quarantined as too short).
    assert [e.text for e in listing.entries if not e.title] == [
        "Computation and Language",
        "New submissions (showing 2 of 2 entries)",
        "Cross submissions (showing 1 of 1 entries)",
        "Replacement submissions (showing 1 of 1 entries)",
    ]


def test_an_arxiv_block_with_an_authors_label_and_one_without_a_title() -> None:
    from paperwatch.ingest.parse import parse_listing

    page = (
        "[1] arXiv:2611.47101 [pdf, other]\n"
        "Title: Loss Spikes Come from the Embedding Layer\n"
        "Authors: Nils Berg, Ama Owusu\n"
        "Subjects: Machine Learning (cs.LG)\n\n"
        "We trace the loss spikes of large training runs to sudden growth of a few rows of the "
        "embedding matrix and remove them by clipping those rows alone.\n\n"
        "[2] arXiv:2611.47102 [pdf]\n"
        "Comments: no title line, so this block is not read as one\n\n"
        "An ordinary paragraph after a block that is not one stays an entry of its own.\n"
    )
    entries = parse_listing(page).entries
    assert [(e.line, e.title, e.authors, e.external_id) for e in entries] == [
        (
            1,
            "Loss Spikes Come from the Embedding Layer",
            ("Nils Berg", "Ama Owusu"),
            "arXiv:2611.47101",
        ),
        (8, None, (), None),
        (11, None, (), None),
    ]
    assert entries[0].text.startswith("We trace the loss spikes")


def test_a_jekyll_papers_data_file_gives_titles_authors_and_abstracts() -> None:
    _, listing = _read("jekyll_data_papers.yml")
    assert [(e.title, e.authors) for e in listing.entries] == [
        ("Sparse Gradients for Federated Speech Models", ("Ines Duarte", "Karl Weber", "Mei Lin")),
        ("Graph Rewiring: When Does It Help Node Classification?", ("Pavel Novak", "Rui Costa")),
    ]
    assert listing.entries[0].text.startswith("Federated training of speech models")
    assert listing.entries[1].text.endswith("and hurts on dense social graphs.")
    assert [e.line for e in listing.entries] == [1, 10]


def test_a_yaml_alias_or_syntax_error_is_refused_with_its_line() -> None:
    from paperwatch.ingest.readers import ReaderError
    from paperwatch.ingest.readers.yamlrec import read_text

    laughs = "- &a {title: One, abstract: x}\n- *a\n"
    with pytest.raises(ReaderError, match=r"line 2: an alias \(\*name\) repeats a node"):
        read_text(laughs)
    with pytest.raises(ReaderError, match="line 3"):
        read_text("- title: One\n  abstract: fine\n - title: Two\n")
    with pytest.raises(ReaderError, match=r"line 1: a YAML str, not a record"):
        read_text("- just a string\n")
    assert read_text("").entries == []


#: The files paperwatch reads right today, with the papers each gives.
_READ_RIGHT = {
    "accepted_titles_authors.txt": 0,
    "arxiv_list_page.txt": 3,
    "checkbox_title_list.md": 0,
    "csl_json_export.json": 2,
    "details_abstract_digest.md": 3,
    "hash_title_fields.md": 3,
    "hf_daily_papers.json": 2,
    "html_table_index_zh.md": 0,
    "jekyll_data_papers.yml": 2,
    "numbered_heading_fields.md": 3,
    "pandoc_accepted_titles.md": 0,
    "pipe_table_titles.md": 0,
    "s2_search_response.json": 2,
}


def test_the_shapes_read_right_ingest_to_the_right_papers(
    tmp_path: Path, prefect_harness: None
) -> None:
    import shutil

    from paperwatch import db
    from paperwatch.flows.ingest import ingest_listings

    folder = tmp_path / "listings"
    folder.mkdir()
    for name in _READ_RIGHT:
        shutil.copy(DATA / name, folder / name)
    database = tmp_path / "db" / "paperwatch.duckdb"
    summary = ingest_listings(str(folder), str(database), "2026-11-25T10:00:00+00:00")
    with db.reader(database) as con:
        per_file = dict(
            con.execute(
                "select f.name, count(distinct p.paper_id) from listing_files f "
                "left join paper_occurrences p using (file_id) group by 1"
            ).fetchall()
        )
        quarantined = con.execute(
            "select f.name, q.line, q.reasons[1] from quarantine q "
            "join listing_files f using (file_id) order by 1, 2"
        ).fetchall()
    assert per_file == _READ_RIGHT
    title = "a title, not an abstract"
    own_prose = (
        "the digest's own prose outside any paper (an introduction, a notice, a section's "
        "lead-in), not a paper's abstract"
    )
    short = "the abstract is shorter than 80 or longer than 5,000 characters: {}"
    assert quarantined == [
        ("accepted_titles_authors.txt", 1, title),
        ("accepted_titles_authors.txt", 3, title),
        ("accepted_titles_authors.txt", 6, title),
        ("accepted_titles_authors.txt", 9, title),
        ("accepted_titles_authors.txt", 12, title),
        ("arxiv_list_page.txt", 1, title),
        ("arxiv_list_page.txt", 3, short.format(40)),
        ("arxiv_list_page.txt", 21, short.format(42)),
        ("arxiv_list_page.txt", 31, short.format(48)),
        ("arxiv_list_page.txt", 33, "no abstract"),
        ("checkbox_title_list.md", 7, "no abstract"),
        ("checkbox_title_list.md", 9, "no abstract"),
        ("checkbox_title_list.md", 14, "no abstract"),
        ("checkbox_title_list.md", 16, "no abstract"),
        ("html_table_index_zh.md", 8, own_prose),
        ("html_table_index_zh.md", 30, "no abstract"),
        ("html_table_index_zh.md", 37, "no abstract"),
        ("html_table_index_zh.md", 44, "no abstract"),
        ("pandoc_accepted_titles.md", 3, own_prose),
        ("pandoc_accepted_titles.md", 8, "no abstract"),
        ("pandoc_accepted_titles.md", 12, "no abstract"),
        ("pandoc_accepted_titles.md", 16, "no abstract"),
        ("pandoc_accepted_titles.md", 20, "no abstract"),
        ("pipe_table_titles.md", 7, "no abstract"),
        ("pipe_table_titles.md", 8, "no abstract"),
        ("pipe_table_titles.md", 9, "no abstract"),
    ]
    assert (summary.new_papers, summary.exact_duplicates) == (20, 0)
    # A quarantined title-only record keeps its authors beside its text.
    with db.reader(database) as con:
        kept = con.execute(
            "select q.raw_text, q.record_fields from quarantine q join listing_files f "
            "using (file_id) where f.name = 'checkbox_title_list.md' and q.line = 7"
        ).fetchall()
    assert kept == [
        (
            "Auditing Privacy in a Single Training Run",
            '{"title": "Auditing Privacy in a Single Training Run", '
            '"authors": ["Ada Stone", "Bo Quinn", "Cy Marsh"]}',
        )
    ]


def test_a_task_list_keeps_its_titles_when_one_item_is_a_note() -> None:
    listing = read_markdown(
        "# NeurIPS 2026 reading list\n\n"
        "- [ ] Sparse Routing For Vision Transformers\n"
        "- [ ] Self-Supervised Depth From Video\n"
        "- [ ] Ask Maria about the code.\n"
    )
    assert [(e.line, e.title, e.text, e.no_abstract) for e in listing.entries] == [
        (
            3,
            "Sparse Routing For Vision Transformers",
            "Sparse Routing For Vision Transformers",
            True,
        ),
        (4, "Self-Supervised Depth From Video", "Self-Supervised Depth From Video", True),
        (5, None, "[ ] Ask Maria about the code.", False),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "Deep Learning For Graphs",
        "Computer Vision and Pattern Recognition",
        "Spotlight Poster",
        "Ada Lovelace¹, Alan Turing²",
    ],
)
def test_a_title_case_phrase_or_footnoted_names_are_not_authors(line: str) -> None:
    from paperwatch.ingest.parse import person_names

    assert person_names(line) is None
    assert person_names("Rose Young, Karl Weber") == ("Rose Young", "Karl Weber")


def test_an_llm_digest_of_labelled_items_gives_one_paper_per_title_label() -> None:
    fmt, listing = _read("llm_digest_labelled_items.md")
    assert fmt == "markdown"
    assert listing.header is not None and listing.header.year == 2026
    assert [(e.line, e.title, e.authors, e.url) for e in listing.entries] == [
        (
            3,
            "Sparse Adapters for Tabular Foundation Models",
            ("Iris Moreau", "Kofi Mensah"),
            "https://arxiv.org/abs/2612.50011",
        ),
        (
            10,
            "When Do Learned Optimisers Generalise?",
            ("Lena Fischer",),
            "https://arxiv.org/abs/2612.50012",
        ),
    ]
    # The score and the reasons are the digest's own lines, not the abstract's.
    assert listing.entries[0].text == (
        "Tabular foundation models are fine-tuned in full for each new dataset. We train "
        "adapters that touch one weight in fifty and match full fine-tuning on thirty "
        "benchmark tables at a tenth of the memory."
    )
    assert listing.entries[1].text.endswith("beyond four times the meta-training scale.")


def test_plain_paragraphs_of_labelled_lines_keep_their_titles_and_authors() -> None:
    fmt, listing = _read("labelled_paragraphs.txt")
    assert fmt == "text"
    assert [(e.line, e.title, e.authors) for e in listing.entries] == [
        (
            3,
            "Counting Contamination in Code Benchmarks",
            ("Noor Aziz", "Pieter de Vries", "Quinn Ellis"),
        ),
        (8, "Error Bars for Leaderboards", ("Rosa Lindqvist",)),
    ]
    # The labelled lines above the abstract are set apart from it, as before.
    body, _, metadata = split_metadata_lines(
        listing.entries[1].text, listing.entries[1].line_breaks
    )
    assert metadata == ("Title: Error Bars for Leaderboards", "Authors: Rosa Lindqvist")
    assert clean_abstract(body).abstract == (
        "Leaderboards rank models by single numbers. We bootstrap the test sets of six "
        "popular leaderboards and show that half of the adjacent ranks are not separable "
        "at the usual level."
    )


def test_summaries_indented_under_bold_titles_are_abstracts_not_code() -> None:
    fmt, listing = _read("indented_summaries.md")
    assert fmt == "markdown"
    assert [(e.line, e.title, e.authors, e.text) for e in listing.entries] == [
        (
            3,
            "Grasping Deformable Bags with Two Arms",
            ("T. Lindahl", "A. Osei"),
            "We teach a two-armed robot to open and fill soft bags from a handful of "
            "demonstrations, reaching nine successes in ten on bags it never saw.",
        ),
        (
            8,
            "Footstep Planning on Loose Gravel",
            ("C. Ibarra",),
            "Legged robots slip on loose ground. We learn a terrain model from foot forces "
            "and plan footsteps that keep the slip below a centimetre.",
        ),
    ]


def test_a_feed_whose_items_hold_content_encoded_only() -> None:
    fmt, listing = _read("content_encoded_feed.rss")
    assert fmt == "feed"
    assert [(e.line, e.title, e.authors) for e in listing.entries] == [
        (6, "Tidal Caches: Eviction That Follows the Query Mix", ("Ines Varga", "Tomas Reyes")),
        (13, "Sparse Probes for Speech Tokenizers", ("Kofi Mensah",)),
    ]
    first, second = (e.text for e in listing.entries)
    assert first.startswith("Key-value caches of long-context models are evicted by fixed rules")
    assert "queries & keep the cache" in first and "96 % of full-cache" in first
    assert second == (
        "Speech tokenizers are compared by reconstruction error alone, which hides whether "
        "their units carry phonetic content. We fit sparse linear probes on frozen units of "
        "six tokenizers. Probes recover phone identity far better from the smaller codebooks "
        "than reconstruction scores suggest."
    )


def test_a_google_scholar_alert_saved_as_text() -> None:
    """Title lines, the ``names - venue, year`` line, the snippet: the snippet is the
    abstract; a result without one has none; the alert's footer is no paper."""
    fmt, listing = _read("scholar_alert.txt")
    assert fmt == "text"
    assert [
        (e.line, e.title, e.authors, e.no_abstract, e.outside_paper) for e in listing.entries
    ] == [
        (
            1,
            "Tidal Caches: Eviction That Follows the Query Mix of Long-Context Sessions",
            ("I Varga", "T Reyes", "K Mensah", "L Okoro"),
            False,
            False,
        ),
        (
            7,
            "Sparse Probes Show What Speech Tokenizers Keep",
            ("K Mensah", "A de Vries"),
            False,
            False,
        ),
        (12, "A Field Guide to Cache Eviction", ("R Osei",), True, False),
        (15, None, (), False, True),
        (18, None, (), False, True),
    ]
    assert listing.entries[1].text == (
        "Speech tokenizers are compared by reconstruction error alone, which hides whether "
        "their units carry phonetic content. We fit sparse linear probes on frozen units …"
    )
    assert listing.entries[4].text == "LIST ALERTS CANCEL ALERT"


def test_a_sentence_with_a_dash_and_a_year_is_no_scholar_source_line() -> None:
    from paperwatch.ingest.parse import parse_listing

    text = (
        "Cache eviction for long sessions\n"
        "KV caches - as deployed in 2026 - grow with every query, and we bound them.\n"
    )
    (entry,) = parse_listing(text).entries
    assert (entry.title, entry.authors, entry.text) == (
        None,
        (),
        " ".join(text.split("\n")).strip(),
    )


def test_an_awesome_list_with_quoted_abstracts_under_linked_titles() -> None:
    fmt, listing = _read("awesome_list_quoted_abstracts.md")
    assert fmt == "markdown"
    assert [(e.line, e.title, e.authors, e.url, e.outside_paper) for e in listing.entries] == [
        (3, None, (), None, True),  # the list's introduction; its navigation is dropped
        (
            12,
            "A Survey of Memory Budgets for Long-Context Inference",
            ("Ines Varga", "Tomas Reyes"),
            "https://arxiv.org/abs/2611.50001",
            False,
        ),
        (
            17,
            "Tidal Caches: Eviction That Follows the Query Mix",
            ("Kofi Mensah",),
            "https://arxiv.org/abs/2611.50002",
            False,
        ),
        (
            20,
            "Sparse Probes for Speech Tokenizers",
            (),
            "https://arxiv.org/abs/2611.50003",
            False,
        ),
    ]
    assert listing.entries[2].text == (
        "Key-value caches are evicted by fixed rules that ignore how the mix of queries "
        "drifts during a session. We learn an eviction score from recent queries and keep "
        "the cache within budget while retaining most of the full-cache accuracy."
    )


def test_linked_titles_with_a_description_a_continuation_or_nothing() -> None:
    abstract = (
        "We learn an eviction score from recent queries and keep the cache within a fixed "
        "memory budget on four suites."
    )
    digest = (
        "## Eviction\n\n"
        f"- **[Tidal Caches for Long Sessions](https://example.org/a)**: {abstract}\n"
        "- [Sparse Probes for Speech Tokenizers](https://example.org/b) [NeurIPS 2026]\n"
        f"  {abstract}\n"
        "  - [Code](https://example.org/b-code)\n"
        "- [A Field Guide to Cache Eviction](https://example.org/c)\n"
    )
    listing = read_markdown(digest)
    assert [(e.line, e.title, e.text, e.no_abstract) for e in listing.entries] == [
        (3, "Tidal Caches for Long Sessions", abstract, False),
        (4, "Sparse Probes for Speech Tokenizers", abstract, False),
        (7, "A Field Guide to Cache Eviction", "A Field Guide to Cache Eviction", True),
    ]


def test_linked_references_under_papers_with_abstracts_stay_references() -> None:
    abstract = " ".join(["Caches grow with every query, and we bound them tightly."] * 3)
    digest = "".join(
        f"## Paper number {n} on caches\n\n{abstract}\n\n"
        f"- [Read the paper on arXiv](https://arxiv.org/abs/2611.5000{n})\n\n"
        for n in (1, 2)
    )
    listing = read_markdown(digest)
    assert [(e.line, e.title, e.text.startswith(abstract)) for e in listing.entries] == [
        (1, "Paper number 1 on caches", True),
        (7, "Paper number 2 on caches", True),
    ]
