"""A process holding more than FD_SETSIZE (1024) files open: select(2) refuses the next descriptor it makes.

dulwich asks select(2) whether a remote has bytes for it; a long-lived host holding many owners open reaches that
(each holds its intent log and its history index), and every fetch then failed with "filedescriptor out of range in
select()". The descriptors here are /dev/null, opened by the test.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

FDS = 1100  # past FD_SETSIZE (1024)


@contextmanager
def many_open_files() -> Iterator[None]:
    """``FDS`` descriptors held open (the soft limit raised for them); skipped where the hard limit is lower."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = FDS + 256
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"the hard limit of open files is {hard}, below {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    opened = [os.open(os.devnull, os.O_RDONLY) for _ in range(FDS)]
    try:
        yield
    finally:
        for fd in opened:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def next_descriptor() -> int:
    """The descriptor the process would open next."""
    probe = os.open(os.devnull, os.O_RDONLY)
    os.close(probe)
    return probe
