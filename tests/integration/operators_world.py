"""A data root with a bad deploy across many owners, shared by the operators' tests (library level).

``bad_deploy(host, n)`` writes, for each of ``n`` owners, a good run by
``Elaina`` and a bad run by ``Elaina-v12`` (a wrong fact and a wrong diary
event); the first owner's bad fact is then corrected by hand, so rolling
its bad run back is a conflict.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikimem.context import WriteContext

BAD_ACTOR = "Elaina-v12"
GOOD_ACTOR = "Elaina"


@dataclass
class Deploy:
    owners: list[str]
    conflicted: str  # the owner whose bad fact was corrected after the bad run


def owner_name(i: int) -> str:
    return f"user:d{i:04d}"


def bad_deploy(host, n: int, *, conflict: bool = True) -> Deploy:
    """Write the good and the bad runs of ``n`` owners (see the module docstring)."""
    owners = []
    for i in range(n):
        owner, _ = host.ensure_owner(owner_name(i))
        owner.add("preferences", "tea", "Drinks oolong tea every morning.",
                  ctx=WriteContext(run=f"run_good_{i}", actor=GOOD_ACTOR, source_conv=f"conv_{i}_1"))
        with owner.vstore.batch(WriteContext(run=f"run_bad_{i}", actor=BAD_ACTOR, source_conv=f"conv_{i}_2"),
                                message="memorize: 1 fact, 1 diary entry"):
            owner.store.add("preferences", "tea", "Hates tea.", owner=owner.id, source_conv=f"conv_{i}_2")
            owner.diary.append("Said they hate tea.", date="2026-07-21", time="14:30", owner=owner.id,
                               source_conv=f"conv_{i}_2")
        owners.append(owner.id)
    if conflict and owners:
        host.owner(owners[0]).add("preferences", "tea", "Drinks green tea now.", ctx=WriteContext(actor="alice"))
    return Deploy(owners, owners[0] if conflict and owners else "")
