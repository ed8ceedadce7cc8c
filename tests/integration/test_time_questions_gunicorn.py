"""Time questions on a real gunicorn, as the issues walked them (issues 23, 35).

The production default (no embedder) and ``make run``'s (the local model,
embedding in the background), several worker processes, every question
asked as soon as the writes are acknowledged — in Chinese and English, the
phrasings of issue 35 among them; with the request's time zone, and (the
production default) with none: the owner's, else the host's ``WIKIMEM_TZ``.
"""

from __future__ import annotations

import pytest
from gunicorn_env import Gunicorn
from timequestions import TZ, WIKI, check_answers, diary_entries, questions, today

from wikimem.client import Client

pytestmark = pytest.mark.slow

OWNER = "user:xnne"
FAR_EAST, FAR_WEST = "Pacific/Kiritimati", "Etc/GMT+12"  # UTC+14 and UTC−12: never the same date


def _ask(client: Client, zone: str, *, tz: str | None, lives_in: str | None = None) -> None:
    client.create_owner()
    if lives_in:  # (the host refuses a diary day after the owner's today)
        client.set_settings(tz=lives_in)
    day = today(zone)
    for file, name, content in WIKI:
        client.add(file, name, content)
    entries = diary_entries(day)
    for date, hhmm, content in entries:
        client.diary_append(content, date=date, time=hhmm)
    answers = {q: client.retrieve(q, tz=tz) for q, _ in questions(day)}
    check_answers({q: a.to_dict() for q, a in answers.items()}, entries, day, zone)


@pytest.mark.parametrize("env", [{}, {"WIKIMEM_EMBEDDER": "local"}], ids=["production default", "make run"])
def test_time_questions_on_gunicorn_right_after_the_writes(tmp_path, env):
    with Gunicorn(tmp_path, WIKIMEM_WORKERS="2", **env) as host:
        # The owner lives where the date is never behind TZ's; the requests' tz, TZ, draws the windows.
        _ask(Client(host.base, host.token, owner=OWNER, timeout=30.0, proxies={}), TZ, tz=TZ, lives_in=FAR_EAST)


def test_time_questions_on_gunicorn_in_the_owner_s_zone_else_the_host_s(tmp_path):
    with Gunicorn(tmp_path, WIKIMEM_WORKERS="2", WIKIMEM_TZ=FAR_WEST) as host:
        by_host = Client(host.base, host.token, owner="user:plain", timeout=30.0, proxies={})
        _ask(by_host, FAR_WEST, tz=None)  # no tz of its own: WIKIMEM_TZ
        by_owner = Client(host.base, host.token, owner="user:east", timeout=30.0, proxies={})
        by_owner.create_owner()
        by_owner.set_settings(tz=FAR_EAST)
        _ask(by_owner, FAR_EAST, tz=None)  # its own tz, a day or two from the host's
