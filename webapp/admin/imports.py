"""Imports in the admin UI: a card, a chat for one person (preview, then run, then roll back), a person's file in
and out, a lorebook out. Each upload is previewed first; the preview page carries the file on (base64, in the
form) to the one POST that imports it. Uploads may be as big as the import limits, for a signed-in operator."""

from __future__ import annotations

import base64

from flask import flash, g, redirect, render_template, request, send_file, url_for

from webapp.hosting import get_host
from webapp.session import current_operator
from wikimem.errors import BadRequest, InvalidValue, NotFound
from wikimem.host import BUNDLE_SUFFIX, IMPORT_ACTOR, Caller, base64_size, character_owner, decode_base64
from wikimem.limits import MAX_CARD_BYTES, MAX_CHAT_BYTES, MAX_PERSON_BYTES

from .access import act, load_owner, require_role
from .blueprint import bp

# The upload routes and what they may carry (a file, or its base64 carried on by the preview page).
UPLOADS = {"admin.import_card": MAX_CARD_BYTES, "admin.import_chat": MAX_CHAT_BYTES,
           "admin.import_person": MAX_PERSON_BYTES}


def allow_uploads() -> None:
    """Before every other hook (the CSRF check reads the form): an import route may receive a file up to its
    limit, once the request comes from a signed-in operator."""
    limit = UPLOADS.get(request.endpoint or "")
    if limit is not None and current_operator() is not None:
        request.max_content_length = base64_size(limit) + 64 * 1024
        request.max_form_memory_size = base64_size(limit) + 1024


bp.record_once(lambda state: state.app.before_request_funcs.setdefault(None, []).insert(0, allow_uploads))


def _upload(limit: int) -> bytes:
    """The file of the form: uploaded (``file``), else carried on by a preview page (``data``, base64)."""
    given = request.files.get("file")
    if given is not None and given.filename:
        raw = given.stream.read(limit + 1)
        if len(raw) > limit:
            raise InvalidValue(f"the file is over {limit:,} bytes")
        return raw
    if request.form.get("data"):
        return decode_base64(request.form["data"], "the file", limit)
    raise BadRequest("choose a file to import")


def _field(name: str) -> str | None:
    return (request.form.get(name) or request.args.get(name) or "").strip() or None


@bp.get("/imports")
def imports():
    host = get_host()
    return render_template("admin/imports.html", characters=host.characters.list(), model=host.llm is not None,
                           owner=_field("owner") or "", limits=UPLOADS)


@bp.post("/imports/card")
def import_card():
    operator, raw = require_role("admin"), _upload(MAX_CARD_BYTES)
    imports, character = get_host().imports, _field("character")
    plan = imports.preview_card(raw, character=character)
    if _field("step") != "import":
        return render_template("admin/import_card.html", plan=plan, data=base64.b64encode(raw).decode())
    with act(character_owner(plan.character), "import-card", operator, actor=IMPORT_ACTOR,
             character=plan.character) as a:
        done = imports.import_card(raw, ctx=a.ctx, character=plan.character)
        a.done(done.commit, run=done.run, created=done.plan.created)
    flash(f"Card imported as {plan.character}" + (f" (commit {done.commit[:10]})." if done.commit else
                                                   ": nothing changed."), "ok")
    return redirect(url_for("admin.owner", owner_id=character_owner(plan.character)))


@bp.post("/imports/chat")
def import_chat():
    operator, raw = require_role("operator"), _upload(MAX_CHAT_BYTES)
    person, character, tz = load_owner(_field("owner") or ""), _field("character") or "", _field("tz")
    imports, step = get_host().imports, _field("step")
    if step not in ("memorize", "transcript"):
        preview = imports.preview_chat(person, character, raw, tz=tz)
        return render_template("admin/import_chat.html", person=person, preview=preview.to_dict(), tz=tz,
                               data=base64.b64encode(raw).decode())
    action = "import-chat" if step == "memorize" else "import-transcript"
    with act(person, action, operator, actor=IMPORT_ACTOR, layer=character) as a:
        done = _run_chat(person, character, raw, step, a, tz)
    return redirect(done)


def _run_chat(person, character: str, raw: bytes, step: str, a, tz: str | None) -> str:
    """Memorize the chat as a job (the job's page), or keep it as a transcript (the person's page)."""
    imports = get_host().imports
    if step == "memorize":
        job, _, preview = imports.import_chat(person, character, raw, ctx=a.ctx, tz=tz, tenant=a.tenant)
        a.done(job=job.id, run=job.params.get("run"), turns=preview.turns)
        return url_for("admin.import_job", job_id=job.id)
    kept = imports.keep_transcript(person, character, raw, ctx=a.ctx, tz=tz)
    a.done(kept["commit"], run=kept["run"])
    flash(f"Chat kept as a transcript in {character}'s layer: {kept['items']} turn(s), run {kept['run']}.", "ok")
    return url_for("admin.owner", owner_id=person.id)


@bp.get("/imports/jobs/<job_id>")
def import_job(job_id: str):
    job = get_host().imports.chat_job(job_id)
    if not g.operator.may_see(str(job.params.get("owner"))):
        raise NotFound(f"no job {job_id!r}")
    step = job.results[0] if job.results else {}
    return render_template("admin/import_job.html", job=job, step=step, result=step.get("result") or {},
                           rolled=_field("rolled"))


@bp.post("/imports/rollback")
def import_rollback():
    operator = require_role("operator")
    person, run = load_owner(_field("owner") or ""), _field("run") or ""
    with act(person, "import-rollback", operator, run=run) as a:
        done = get_host().imports.roll_back(person, run, ctx=a.ctx)
        a.done(done["commit"], discarded=done["discarded"])
    flash(f"Import run {run} rolled back" + (f" (commit {done['commit'][:10]})" if done["commit"] else "")
          + (", its proposal discarded." if done["discarded"] else "."), "ok")
    return redirect(_field("next") or url_for("admin.owner", owner_id=person.id))


@bp.post("/imports/person")
def import_person():
    operator, owner_id = require_role("admin"), _field("owner") or ""
    replace = request.form.get("replace") == "on"
    with act(owner_id, "import-person", operator, replace=replace or None) as a:
        done = get_host().imports.import_person(owner_id, request.files["file"].stream, replace=replace)
        a.done(done.head, replaced=done.replaced)
    missing = f" Characters to register: {', '.join(done.unregistered)}." if done.unregistered else ""
    flash(f"{owner_id} imported at {done.head[:10]}{' (replaced)' if done.replaced else ''}.{missing}", "ok")
    return redirect(url_for("admin.owner", owner_id=owner_id))


@bp.get("/imports/export")
def export_person():
    owner, operator = load_owner(_field("owner") or ""), g.operator
    data = get_host().imports.export_person(owner.id, by=operator.name)
    get_host().gate.note(Caller.operator(operator.name, operator.owner_prefix), "export-person", owner=owner.id)
    return send_file(_bytes(data), mimetype="application/x-git-bundle", as_attachment=True,
                     download_name=get_host().export_name(owner.id, BUNDLE_SUFFIX.lstrip(".")))


@bp.get("/imports/lorebook")
def export_lorebook():
    owner, character, shared = load_owner(_field("owner") or ""), _field("character"), bool(_field("shared"))
    imports, fmt = get_host().imports, _field("format") or "worldinfo"
    name = get_host().export_name(owner.id, f"{character or 'shared'}.{'md' if fmt == 'databank' else 'json'}")
    if fmt == "databank":
        text = imports.data_bank(owner, character, shared=shared)
        return send_file(_bytes(text.encode()), mimetype="text/markdown", as_attachment=True, download_name=name)
    book = imports.world_info(owner, character, shared=shared)
    return send_file(_bytes(_json(book)), mimetype="application/json", as_attachment=True, download_name=name)


def _bytes(data: bytes):
    from io import BytesIO

    return BytesIO(data)


def _json(value) -> bytes:
    import json

    return (json.dumps(value, indent=1, ensure_ascii=False) + "\n").encode("utf-8")

