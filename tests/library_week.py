"""A hand-built week for tests/test_library.py: new papers (title, authors, abstract) written
for the tests, some close to the 30-paper library ``tests/data/library/ann.bib``, most not.

:data:`EXPECTED_TOP_FIVE` is the hand-labelled answer: the five papers a reader with that
library should get first, closest first, with the library paper each is closest to. The
labels follow how the papers were written: "edit" restates a 2026 library paper nearly
word for word, "video" restates another 2026 paper in other words, "speech" restates a
2024 paper word for word (two years older: it weighs 0.63), "molecule" restates a 2025
paper in other words, "rlhf-edit" is on a library topic (text-driven image editing) with
a method the library does not have. "topics" restates a 2011 paper word for word, but an
item 15 years old weighs 0.03: it comes sixth. The others share no topic with the library.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paperwatch import db
from paperwatch.db.trends import update_paper_terms
from paperwatch.ingest.clean import clean_abstract

from .report_weeks import add_week

WEEK = "2026-W48"
LIBRARY = Path(__file__).resolve().parent / "data" / "library" / "ann.bib"

#: label → (title, authors, abstract)
PAPERS: dict[str, tuple[str, list[str], str]] = {
    "coral": (
        "Counting Coral Bleaching from Satellite Images",
        ["Rosa Delgado", "Tom Becker"],
        "We count bleached coral colonies in satellite images of shallow reefs. A "
        "segmentation network trained on diver surveys maps bleaching across three seasons "
        "and agrees with field counts within ten percent.",
    ),
    "edit": (
        "Local Image Editing with Masked Diffusion",
        ["Hana Sato", "Ann Lee"],
        "We edit a chosen region of an image with a text-guided diffusion model. The user "
        "mask restricts the denoising steps to that region and an attention map keeps the "
        "background unchanged, so local image editing preserves identity and layout.",
    ),
    "quantum": (
        "Decoding Surface Codes with Belief Propagation",
        ["Ivan Petrov"],
        "Surface codes protect logical qubits from noise. We decode them with belief "
        "propagation followed by ordered statistics and lower the logical error rate on "
        "circuit-level noise at the same decoding time.",
    ),
    "molecule": (
        "Directional Messages in Equivariant Graph Neural Networks",
        ["Bao Nguyen", "Lina Haddad"],
        "We predict molecular properties of small molecules from their three-dimensional "
        "structure with an equivariant graph neural network. Messages between atoms carry "
        "directions, and molecular property prediction improves over invariant models.",
    ),
    "rlhf-edit": (
        "Reinforcement Learning from Human Feedback for Image Editing",
        ["Omar Farouk"],
        "Text-driven image editing with a diffusion model often ignores what users prefer. "
        "We fine-tune the diffusion model with reinforcement learning from human feedback "
        "on pairs of edited images, and the edits follow the prompt more closely.",
    ),
    "manuscripts": (
        "Marginal Notes in Monastic Libraries",
        ["Clara Ionescu"],
        "Medieval manuscripts hold marginal notes in many hands. We catalogue the marginalia "
        "of twelve monastic libraries, date them by ink and script, and find that readers "
        "annotated sermons more often than chronicles.",
    ),
    "video": (
        "Editing Videos Frame by Frame without Flicker",
        ["Min-jun Cho"],
        "Applying an image diffusion model to each frame of a video makes the result flicker. "
        "We share attention keys between neighbouring frames so that video editing stays "
        "temporally consistent.",
    ),
    "social": (
        "Information Diffusion on Follower Graphs",
        ["Pablo Ruiz"],
        "Rumours spread through follower graphs in bursts. We fit a diffusion process on "
        "the graph to cascades of reposts and predict which users a rumour reaches next.",
    ),
    "speech": (
        "Ten Hours Are Enough for Low-Resource Speech Recognition",
        ["Amara Diallo"],
        "Speech recognition for low-resource languages lacks transcribed audio. We fine-tune "
        "a self-supervised speech model on ten hours of transcribed speech and reach usable "
        "word error rates for four West African languages.",
    ),
    "database": (
        "Cost Models for Column Store Joins",
        ["Eva Lindqvist", "A. Lee"],
        "Join order decides the cost of analytical queries in column stores. We learn a cost "
        "model from executed plans and choose join orders that halve the run time of a "
        "decision-support benchmark.",
    ),
    "topics": (
        "Online Topic Models for News Archives",
        ["Étienne Moreau"],
        "We fit latent Dirichlet allocation topic models to a large news archive with online "
        "variational inference. The topics follow news events over the years, and online "
        "inference scales topic models to millions of articles.",
    ),
    "robot": (
        "Grasping Unknown Objects with Reinforcement Learning",
        ["Jonas Weber"],
        "A robot arm learns to grasp objects it has never seen. Reinforcement learning in "
        "simulation with randomised textures transfers to the real arm, which grasps "
        "nine in ten unknown objects.",
    ),
    "birds": (
        "Tracking Swift Migration with Weather Radar",
        ["Ann Lée", "Ravi Menon"],
        "Swifts migrate at night above the reach of cameras. Weather radar records their "
        "flocks, and we separate birds from rain to measure migration over a whole season.",
    ),
}

#: The hand-labelled answer: (label, title of the closest library paper), closest first.
EXPECTED_TOP_FIVE = [
    ("edit", "Mask-Guided Diffusion for Local Image Editing"),
    ("video", "Temporally Consistent Video Editing with Image Diffusion Models"),
    ("speech", "Self-Supervised Speech Recognition for Low-Resource Languages"),
    ("molecule", "Equivariant Graph Neural Networks for Molecular Property Prediction"),
    ("rlhf-edit", "Cross-Attention Control for Text-Driven Image Editing"),
]


def paper_ids() -> dict[str, str]:
    """label → paper_id."""
    return {label: clean_abstract(text).paper_id for label, (_, _, text) in PAPERS.items()}


def build_week(database: Path) -> dict[str, str]:
    """The week's papers loaded in :data:`WEEK` with titles and authors, terms extracted as
    ingestion does; returns label → paper_id."""
    ids = paper_ids()
    with db.writer(database) as con:
        add_week(
            con, WEEK, [text for _, _, text in PAPERS.values()], name="001_" + "b" * 16 + ".txt"
        )
        rows: list[dict[str, Any]] = [
            {"id": ids[label], "title": title, "authors": authors}
            for label, (title, authors, _) in PAPERS.items()
        ]
        for row in rows:
            con.execute(
                "update papers set title = $title, authors = $authors where paper_id = $id", row
            )
        update_paper_terms(con)
    return ids
