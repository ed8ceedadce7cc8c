"""A line per area of the suite as it starts (``tests/unit``, ``tests/integration``…), so that a long
``make test`` says which part runs instead of only dots (issue 36). A pytest plugin, loaded by
``tests/conftest.py``; on the xdist controller it counts what the workers collected.
"""

from __future__ import annotations

from collections import Counter

import pytest


def area_of(nodeid: str) -> str:
    """``tests/integration`` of ``tests/integration/test_x.py::test_y`` (the folder under tests/)."""
    parts = nodeid.split("::", 1)[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


class Areas:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.counts: Counter[str] = Counter()
        self.started: set[str] = set()

    def count(self, nodeids) -> None:
        if not self.counts:  # every worker collects the same tests: count them once
            self.counts.update(area_of(n) for n in nodeids)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items) -> None:
        self.count(item.nodeid for item in items)

    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        self.count(ids)

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        area = area_of(nodeid)
        if area in self.started:
            return
        self.started.add(area)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            n = self.counts.get(area)
            if getattr(reporter._tw, "width_of_current_line", 0):  # after a line of dots
                reporter.write("\n")
            reporter.write_line(f"── {area}{f' ({n} tests)' if n else ''} starting")


def register(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist), not an xdist worker
        config.pluginmanager.register(Areas(config), "wikimem-areas")
