"""Time questions on a real gunicorn, as the issue walked them (issue 23).

The production default (no embedder) and ``make run``'s (the local model,
embedding in the background), several worker processes, every question
asked as soon as the writes are acknowledged.
"""

from __future__ import annotations

import pytest
from gunicorn_env import Gunicorn
from timequestions import QUESTIONS, TZ, WIKI, check_answers, diary_entries, today

from wikimem.client import Client

pytestmark = pytest.mark.slow

OWNER = "user:xnne"


@pytest.mark.parametrize("env", [{}, {"WIKIMEM_EMBEDDER": "local"}], ids=["production default", "make run"])
def test_time_questions_on_gunicorn_right_after_the_writes(tmp_path, env):
    with Gunicorn(tmp_path, WIKIMEM_WORKERS="2", **env) as host:
        client = Client(host.base, host.token, owner=OWNER, timeout=30.0, proxies={})
        client.create_owner()
        day = today()
        for file, name, content in WIKI:
            client.add(file, name, content)
        entries = diary_entries(day)
        for date, hhmm, content in entries:
            client.diary_append(content, date=date, time=hhmm)
        answers = {q: client.retrieve(q, tz=TZ) for q, _ in QUESTIONS}
    check_answers({q: a.to_dict() for q, a in answers.items()}, entries, day)
