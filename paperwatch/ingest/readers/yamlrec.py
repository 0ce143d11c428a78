"""YAML lists of paper records: a static site's ``_data/papers.yml`` (Jekyll, Hugo),
a workshop's accepted-papers file.

The syntax is PyYAML's safe loader (plain data: no tags that build objects); the records
are mapped as JSON records are (:func:`paperwatch.ingest.readers.jsonrec.records_listing`:
``title``, ``authors``, ``abstract``, ``url``, …). A file is a list of records, a mapping
holding lists of them under ``papers``, ``entries``, ``items``… (as JSON may), or one
record. Anchors and aliases are refused: an alias repeats a node without writing it again,
so a few lines can stand for billions of values ("billion laughs").
"""

from __future__ import annotations

import yaml

from paperwatch.ingest.parse import Listing, decode_listing
from paperwatch.ingest.readers import ReaderError
from paperwatch.ingest.readers.jsonrec import LIST_KEYS, records_listing


def read(data: bytes, name: str) -> Listing:
    """Read YAML bytes; see :func:`read_text`.

    Raises:
        paperwatch.ingest.parse.ListingDecodeError: not UTF-8.
        ReaderError: not valid YAML, an alias, or not records.
    """
    return read_text(decode_listing(data, name), name)


def read_text(text: str, name: str = "<text>") -> Listing:
    """The records of YAML ``text`` as entries, in file order, each at the 1-based line
    where it starts (a record without an abstract too: it is quarantined as "no
    abstract"). An empty document has no entries.

    Raises:
        ReaderError: a syntax error (its line), more than one document, an anchor or
            alias (its line), or a value that is not a record (a mapping).
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    loader = _NoAliasLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return records_listing("yaml", text, [])
        records = [
            (node.start_mark.line + 1, loader.construct_document(node))
            for node in _record_nodes(root)
        ]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise ReaderError("yaml", mark.line + 1 if mark else None, str(exc.problem)) from None
    except yaml.YAMLError as exc:
        raise ReaderError("yaml", None, str(exc)) from None
    except RecursionError:
        raise ReaderError("yaml", None, "nested too deep") from None
    finally:
        loader.dispose()
    return records_listing("yaml", text, records)


def _record_nodes(root: yaml.Node) -> list[yaml.Node]:
    """The nodes of the records: the items of a top-level list, else of every list the
    top-level mapping holds under a key of :data:`LIST_KEYS`, else the root itself."""
    if isinstance(root, yaml.SequenceNode):
        return list(root.value)
    if isinstance(root, yaml.MappingNode):
        held = [
            value.value
            for key, value in root.value
            if isinstance(key, yaml.ScalarNode)
            and key.value in LIST_KEYS
            and isinstance(value, yaml.SequenceNode)
        ]
        if held:
            return sorted((node for items in held for node in items), key=_start)
    return [root]


def _start(node: yaml.Node) -> int:
    return int(node.start_mark.index)


class _NoAliasLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses an alias where the composer meets it."""

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        """Compose as the safe loader does; an alias raises instead.

        Raises:
            ReaderError: at the alias's line.
        """
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise ReaderError("yaml", mark.line + 1, "an alias (*name) repeats a node: not read")
        return super().compose_node(parent, index)
