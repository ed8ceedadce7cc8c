"""The wiki-link graph of a memory: which item links to which, and which links dangle (:func:`link_graph`).

Nodes are the items that link or are linked (``file:name``) and the targets
of links that name no item (``unresolved``); an edge is one item linking to
another (each pair once); items without a link in or out are only counted
(``isolated``), as upstream's graph leaves them out.
:meth:`LinkGraph.to_json` is ``{"nodes": [{"id", "file", "name",
"unresolved"}], "edges": [{"source", "target"}]}``; :meth:`LinkGraph.to_mermaid`
a ``graph LR`` with the dangling targets dashed (upstream's ``wikimem graph``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from wikimem.links import parse_wiki_links

__all__ = ["LinkGraph", "GraphNode", "link_graph"]


@dataclass(frozen=True)
class GraphNode:
    file: str
    name: str
    unresolved: bool = False

    @property
    def id(self) -> str:
        return f"{self.file}:{self.name}"


@dataclass
class LinkGraph:
    """Nodes (items first, by id; then the dangling targets, by id) and edges (``(source id, target id)``)."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[tuple[str, str]] = field(default_factory=list)
    isolated: int = 0  # items with no link in or out (not nodes)

    def outgoing(self, node_id: str) -> list[str]:
        return [t for s, t in self.edges if s == node_id]

    def incoming(self, node_id: str) -> list[str]:
        return [s for s, t in self.edges if t == node_id]

    @property
    def dangling(self) -> list[GraphNode]:
        return [n for n in self.nodes if n.unresolved]

    def to_json(self) -> dict[str, Any]:
        return {"nodes": [{"id": n.id, "file": n.file, "name": n.name, "unresolved": n.unresolved}
                          for n in self.nodes],
                "edges": [{"source": s, "target": t} for s, t in self.edges]}

    def to_mermaid(self) -> str:
        """``graph LR``: one line a node (``n0["file:name"]``, dangling ones ``:::unresolved``), one an edge."""
        short = {n.id: f"n{k}" for k, n in enumerate(self.nodes)}
        lines = ["graph LR"]
        for n in self.nodes:
            label = n.id.replace('"', "#quot;")
            lines.append(f'    {short[n.id]}["{label}"]' + (":::unresolved" if n.unresolved else ""))
        lines += [f"    {short[s]} --> {short[t]}" for s, t in self.edges]
        if self.dangling:
            lines.append("    classDef unresolved stroke-dasharray: 5 5;")
        return "\n".join(lines) + "\n"


def link_graph(items: Iterable[Any]) -> LinkGraph:
    """The graph of ``items`` (anything with ``file``, ``name`` and ``content``: wiki items, in store order)."""
    items = list(items)
    known = {(i.file, i.name) for i in items}
    edges: dict[tuple[str, str], None] = {}
    dangling: dict[tuple[str, str], None] = {}
    for item in items:
        for link in parse_wiki_links(item.content):
            target = (link.file, " ".join(link.name.split()))
            if target not in known:
                dangling.setdefault(target, None)
            edges.setdefault((f"{item.file}:{item.name}", f"{target[0]}:{target[1]}"), None)
    linked = {end for edge in edges for end in edge}
    nodes = sorted((GraphNode(f, n) for f, n in known if f"{f}:{n}" in linked), key=lambda n: n.id)
    nodes += sorted((GraphNode(f, n, True) for f, n in dangling), key=lambda n: n.id)
    return LinkGraph(nodes, list(edges), isolated=len(known) - (len(nodes) - len(dangling)))
