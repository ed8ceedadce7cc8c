"""A diary day after today is a plan, filed only when asked for (issue 36): the API's diary append, a batch's diary
op and the owner's own verb refuse it (422, nothing written) unless ``planned: true``; today and earlier days are
written as before. Real app, real repositories; "today" is the owner's (its time zone) at the time of the test."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from apiworld import ADMIN, auth

from webapp import create_app
from wikimem.errors import InvalidValue

O = "/api/v1/owners/user:plan"
TZ = "Pacific/Kiritimati"  # UTC+14: its today is often the host's tomorrow, so the owner's zone must decide


def _today() -> date:
    return datetime.now(ZoneInfo(TZ)).date()


@pytest.fixture
def client(tmp_path):
    client = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN}).test_client()
    assert client.put(O, headers=auth(ADMIN)).status_code == 201
    assert client.put(O + "/settings", headers=auth(ADMIN), json={"tz": TZ}).status_code == 200
    return client


def _dates(client) -> list[str]:
    return client.get(O + "/diary/dates", headers=auth(ADMIN)).get_json()["dates"]


def test_a_date_after_today_is_refused_unless_planned(client):
    tomorrow = (_today() + timedelta(days=1)).isoformat()
    refused = client.post(O + "/diary", headers=auth(ADMIN), json={"content": "concert", "date": tomorrow})
    assert refused.status_code == 422 and "planned: true" in refused.get_json()["error"]["message"]
    assert _dates(client) == []  # nothing written
    planned = client.post(O + "/diary", headers=auth(ADMIN), json={"content": "concert", "date": tomorrow,
                                                                   "planned": True})
    assert planned.status_code == 201 and planned.get_json()["entry"]["date"] == tomorrow
    today = client.post(O + "/diary", headers=auth(ADMIN), json={"content": "rehearsal", "date": _today().isoformat()})
    assert today.status_code == 201  # today in the owner's zone is no plan
    assert _dates(client) == sorted([_today().isoformat(), tomorrow])


def test_a_timestamp_after_today_is_a_plan_too(client):
    later = (datetime.now(ZoneInfo(TZ)) + timedelta(days=2)).astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%MZ")
    assert client.post(O + "/diary", headers=auth(ADMIN), json={"content": "trip", "ts": later}).status_code == 422
    assert client.post(O + "/diary", headers=auth(ADMIN),
                       json={"content": "trip", "ts": later, "planned": True}).status_code == 201


def test_a_batch_with_an_unplanned_future_day_writes_nothing(client):
    tomorrow = (_today() + timedelta(days=1)).isoformat()
    ops = [{"op": "add", "file": "notes", "name": "a", "content": "first"},
           {"op": "diary", "content": "later", "date": tomorrow}]
    refused = client.post(O + "/batch", headers=auth(ADMIN), json={"ops": ops})
    assert refused.status_code == 422, refused.get_json()
    assert client.get(O + "/items/notes/a", headers=auth(ADMIN)).status_code == 404 and _dates(client) == []
    ops[1]["planned"] = True
    assert client.post(O + "/batch", headers=auth(ADMIN), json={"ops": ops}).status_code == 200
    bad = client.post(O + "/batch", headers=auth(ADMIN), json={"ops": [{"op": "diary", "content": "x",
                                                                         "planned": "yes"}]})
    assert bad.status_code == 400 and "true or false" in bad.get_json()["error"]["message"]


def test_the_owners_verb_decides_for_every_edge(tmp_path):
    from wikimem.host.assembly import make_host

    owner, _ = make_host(tmp_path / "data").ensure_owner("user:lib")
    far = (date.today() + timedelta(days=400)).isoformat()
    with pytest.raises(InvalidValue, match="after today"):
        owner.diary_append("a wrong year", date=far)
    assert owner.diary_append("a plan", date=far, planned=True).value.date == far
    assert owner.diary_append("an old day", date="2001-02-03").value.date == "2001-02-03"
