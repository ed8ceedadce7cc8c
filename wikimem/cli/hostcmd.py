"""``serve``, ``token mint|list|revoke|rotate``, ``operator add|list|remove|role|passwd``: the host and its
credentials.

Flask and the host layer are imported only when one of these commands runs,
so ``wikimem ls`` keeps working with the standard library alone. Every
change of a credentials file is an audit event (:mod:`wikimem.host.auditlog`)
on stderr, with the system user as its actor.

``wikimem serve`` is the development server (one process, threads). In
production run gunicorn: ``gunicorn -c deploy/gunicorn.conf.py``.
"""

from __future__ import annotations

import functools
import getpass
import os
import secrets
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import EXIT_ERROR, EXIT_NOT_FOUND, EXIT_OK, Parser, host_config, read_setting

ADMIN_TOKEN_FILE = "admin-token"
SECRET_KEY_FILE = "secret-key"
TOKENS_FILE = "tokens.jsonl"  # the development server's tokens file, when WIKIMEM_TOKENS_FILE names none


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the host (development server; use gunicorn in production)")
    p.add_argument("--data", default=None, help="data root (default: $WIKIMEM_DATA or ./data)")
    p.add_argument("--bind", default=None, help="HOST:PORT to listen on (default: $WIKIMEM_BIND or 127.0.0.1:8000)")
    p.add_argument("--demo", action="store_true", help="fill an empty data root with demo owners first")
    p.set_defaults(handler=cmd_serve)

    _register_tokens(sub)
    _register_operators(sub)


# The setting behind each credentials file's --file default.
_FILE_KEYS = {"WIKIMEM_TOKENS_FILE": "TOKENS_FILE", "WIKIMEM_OPERATORS_FILE": "OPERATORS_FILE"}


def _file_option(parser, var: str, what: str) -> None:
    parser.add_argument("--file", default=None, help=f"{what} (default: ${var})")


def _register_tokens(sub) -> None:
    p = sub.add_parser("token", help="API tokens: mint, list, revoke, rotate")
    tsub = p.add_subparsers(dest="token_command", metavar="ACTION", required=True, parser_class=Parser)
    m = tsub.add_parser("mint", help="make a token, store its hash, print the secret once")
    m.add_argument("name", help="who uses it, e.g. worker-elaina")
    m.add_argument("--scope", action="append", choices=("read", "write", "admin"), required=True,
                   help="read, write or admin (repeatable)")
    m.add_argument("--owner-prefix", action="append", default=None,
                   help="only owners whose id starts with this (repeatable: owners under any of them)")
    m.add_argument("--character", default=None, metavar="ID",
                   help="the character the token speaks as (a registered character id, e.g. kai)")
    m.add_argument("--expires", default=None, metavar="DURATION",
                   help="it stops working after this long: 90d, 12h, 2w… (default: never)")
    _file_option(m, "WIKIMEM_TOKENS_FILE", "tokens file")
    m.set_defaults(handler=cmd_token_mint)
    ls = tsub.add_parser("list", help="the tokens of the file (id, name, scopes, owners, character, created, "
                                      "expires, last used)")
    ls.add_argument("--all", action="store_true", help="revoked and expired tokens too")
    _file_option(ls, "WIKIMEM_TOKENS_FILE", "tokens file")
    ls.set_defaults(handler=cmd_token_list)
    ro = tsub.add_parser("rotate", help="a new secret for a token (same name, scopes, owners); the old one "
                                        "works until the grace period ends")
    ro.add_argument("token", help="a token id from `wikimem token list` (6+ hex digits) or a token name")
    ro.add_argument("--grace", default="1d", metavar="DURATION",
                    help="how long the old secret keeps working: 1d (default), 2h, 0s…")
    _file_option(ro, "WIKIMEM_TOKENS_FILE", "tokens file")
    ro.set_defaults(handler=cmd_token_rotate)
    r = tsub.add_parser("revoke", help="revoke a token by id or name; it stops working at once")
    r.add_argument("token", help="a token id from `wikimem token list` (6+ hex digits) or a token name")
    r.add_argument("--all", action="store_true", help="revoke every token of that name")
    _file_option(r, "WIKIMEM_TOKENS_FILE", "tokens file")
    r.set_defaults(handler=cmd_token_revoke)


# wikimem.host.access.operators.ROLES and DEFAULT_ROLE (not imported: building the parser stays light).
ROLES, DEFAULT_ROLE = ("reviewer", "operator", "admin"), "reviewer"


def _register_operators(sub) -> None:
    p = sub.add_parser("operator", help="admin UI operator accounts: add, list, remove, role, passwd")
    osub = p.add_subparsers(dest="operator_command", metavar="ACTION", required=True,
                            parser_class=Parser)
    def action(name: str, handler, help_: str, *arguments: tuple[tuple, dict]) -> None:
        q = osub.add_parser(name, help=help_)
        if name != "list":
            q.add_argument("name")
        for args, kwargs in arguments:
            q.add_argument(*args, **kwargs)
        _file_option(q, "WIKIMEM_OPERATORS_FILE", "accounts file")
        q.set_defaults(handler=handler)

    action("add", cmd_operator_add, "add an account (password read from the terminal or stdin)",
           (("--role",), {"choices": ROLES, "default": DEFAULT_ROLE,
                          "help": f"reviewer (reads), operator (also reverts, rolls back, restores), admin "
                                  f"(everything); default {DEFAULT_ROLE}"}),
           (("--owner-prefix",), {"default": "", "help": "only owners whose id starts with this"}))
    action("list", cmd_operator_list, "the accounts (name, role, owners)")
    action("remove", cmd_operator_remove, "remove an account; its sessions end at once")
    action("role", cmd_operator_role, "change an account's role; its sessions end (sign in again)",
           (("role",), {"choices": ROLES}))
    action("passwd", cmd_operator_passwd, "set an account's password (from the terminal or stdin); its sessions end")


def _split_bind(bind: str) -> tuple[str, int]:
    host, sep, port = bind.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--bind must be HOST:PORT, got {bind!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _kept_secret(path: Path, make) -> str:
    """The secret kept in ``path``, else a new one from ``make()`` stored there once (mode 0600).

    The new file appears whole or not at all (written aside, then hard-linked
    into place), so two servers starting at once agree on one secret.
    """
    try:
        return _read_secret(path)
    except FileNotFoundError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(make() + "\n")
        os.link(tmp, path)
    except FileExistsError:  # another process stored one first: use theirs
        pass
    finally:
        tmp.unlink()
    return _read_secret(path)


def _read_secret(path: Path) -> str:
    value = path.read_text(encoding="utf-8").strip()
    if not value:
        raise ValueError(f"{path} is empty; delete it and a new secret is made")
    return value


def _admin_token(data: Path, configured: str | None) -> str:
    """``$WIKIMEM_ADMIN_TOKEN``, else the one kept in the data root (made on first run, mode 0600)."""
    if configured:
        return configured
    return _kept_secret(data / ADMIN_TOKEN_FILE, lambda: "wmk_dev_" + secrets.token_urlsafe(24))


def _tokens_file(data: Path, configured: str | None) -> Path:
    """``$WIKIMEM_TOKENS_FILE``, else a tokens file in the data root (made empty once, mode 0600).

    Every request re-reads the file when it changes, so a token minted into it works at once.
    """
    if configured:
        return Path(configured)
    path = data / TOKENS_FILE
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    return path


def _program() -> str:
    """How the user can run ``wikimem`` again from here (``make run`` runs ``.venv/bin/wikimem``)."""
    import shlex

    if Path(sys.argv[0]).name == "wikimem":
        return shlex.quote(sys.argv[0])
    return f"{shlex.quote(sys.executable)} -m wikimem"


def token_lines(tokens: Path) -> list[str]:
    """The start banner's lines on the tokens file: where it is and how to mint a scoped token into it."""
    import shlex

    return [f"tokens file: {tokens} (a token minted into it works at once, no restart)",
            f"  mint one:  {_program()} token mint my-bot --scope read --scope write --owner-prefix user: "
            f"--file {shlex.quote(str(tokens))}"]


def cmd_serve(args) -> int:
    settings = host_config(args, BIND=args.bind)  # WIKIMEM_*, checked before anything is made
    host, port = _split_bind(settings.bind)
    from webapp.devserver import listen, serve  # flask only now

    try:  # first, so a busy port is said plainly before anything is made
        listener = listen(host, port)
    except OSError as exc:
        print(busy_port_message(host, port, exc), file=sys.stderr)
        return EXIT_ERROR
    data = Path(settings.data_root)
    data.mkdir(parents=True, exist_ok=True)
    token = _admin_token(data, settings.admin_token)
    from webapp import create_app

    tokens = _tokens_file(data, settings.tokens_file)
    config = {"DATA_ROOT": str(data), "BIND": settings.bind, "ADMIN_TOKEN": token, "TOKENS_FILE": str(tokens)}
    if settings.secret_key:
        config["ENV"] = settings.env
    else:
        # The development server keeps its session key next to the admin token,
        # so a restart does not sign every operator out.
        config.update(ENV="development", SECRET_KEY=_kept_secret(data / SECRET_KEY_FILE, lambda: secrets.token_hex(32)))
    from webapp.logs import configure

    configure(settings.log_format or "text")  # WIKIMEM_LOG_FORMAT; plain text by default here
    app = create_app(config)
    if args.demo:
        from wikimem.host import bad_run_hint, seed_demo

        with app.app_context():
            from webapp.hosting import get_host

            seeded = seed_demo(get_host())
            hint = bad_run_hint(get_host())
        print(demo_line(seeded))
        if hint:
            print(f"  {hint}")
    port = listener.getsockname()[1]  # the one the system gave, for --bind HOST:0
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    print(f"wikimem host on http://{shown}:{port}/  (admin UI: /admin/, API: /api/v1/)")
    print(f"data root:   {data.resolve()}")
    print(f"admin token: {token}")
    for line in token_lines(tokens):
        print(line)
    for line in service_lines(settings):
        print(line)
    print(f"port:        {port}; another with WIKIMEM_BIND=HOST:PORT (make run too) or --bind HOST:PORT")
    sys.stdout.flush()
    serve(app, host, listener)
    return EXIT_OK


def demo_line(seeded) -> str:
    """The start message on the demo owners: made now, already there, or left out (the data root had owners)."""
    if seeded.created:
        return f"demo data: {', '.join(seeded.owners)}"
    mine = f"{seeded.others} owner{'' if seeded.others == 1 else 's'} of yours"
    if not seeded.owners:
        return f"demo data: not added, the data root already holds {mine}"
    return f"demo data: {', '.join(seeded.owners)} (already there)" + (f"; and {mine}" if seeded.others else "")


def busy_port_message(host: str, port: int, exc: OSError) -> str:
    """What ``wikimem serve`` says when it cannot listen: why, and how to pick another address."""
    import errno

    from webapp.devserver import free_port_after

    free = free_port_after(host, port if 0 < port < 65535 else 8000)
    other = f"{host}:{free or 'PORT'}"
    why = ("the port is in use (another wikimem, or another program)" if exc.errno == errno.EADDRINUSE
           else exc.strerror or str(exc))
    return (f"wikimem: cannot listen on {host}:{port}: {why}.\n"
            f"  Pick another address: WIKIMEM_BIND={other} make run\n"
            f"                    or: wikimem serve --bind {other}   (WIKIMEM_BIND works for it too)")


def _endpoint(url: str) -> str:
    """A URL as the banner shows it: no user name or password."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else url


def service_lines(settings) -> list[str]:
    """The start banner's lines on memorize (the chat model) and the embedder: on or off, and how to turn on."""
    if settings.llm_url:
        memorize = f"on: {settings.llm_model} at {_endpoint(settings.llm_url)}"
    else:
        memorize = "off (POST …/memorize answers 501): set WIKIMEM_LLM_URL and WIKIMEM_LLM_MODEL"
    if settings.embedder == "local":
        embedder = "the bundled local model (WIKIMEM_EMBEDDER=local): retrieval fuses BM25 with vectors"
    elif settings.embed_url and settings.embedder != "none":
        embedder = f"{settings.embed_model} at {_endpoint(settings.embed_url)}: retrieval fuses BM25 with vectors"
    else:
        embedder = ("off, retrieval is BM25 only: WIKIMEM_EMBEDDER=local, or WIKIMEM_EMBED_URL and "
                    "WIKIMEM_EMBED_MODEL")
    tz = getattr(settings, "tz", None)
    zone = (f"{tz} (WIKIMEM_TZ) for owners without a tz of their own" if tz else
            f"the machine's local zone ({_local_zone()}) for owners without a tz: set WIKIMEM_TZ=Area/City")
    return [f"memorize:    {memorize}", f"embedder:    {embedder}", f"time zone:   {zone}"]


def _local_zone() -> str:
    from datetime import datetime

    return datetime.now().astimezone().tzname() or "unknown"


Command = Callable[[Any], int]


def _needs_file(var: str) -> Callable[[Command], Command]:
    """Run the command only with its credentials file: ``--file``, else the setting ``var`` names."""
    def wrap(cmd: Command) -> Command:
        @functools.wraps(cmd)
        def run(args) -> int:
            args.file = args.file or read_setting(_FILE_KEYS[var])
            if not args.file:
                print(f"wikimem: give --file or set {var}", file=sys.stderr)
                return EXIT_ERROR
            return cmd(args)
        return run
    return wrap


def _audit(action: str, **fields) -> None:
    """An audit event of a credentials change, on stderr (the actor: the system user running the command)."""
    import logging

    from wikimem.host import AUDIT_LOGGER, Caller, Gate

    logger = logging.getLogger(AUDIT_LOGGER)
    if not logger.hasHandlers():
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("wikimem: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        actor = getpass.getuser()
    except (KeyError, OSError):  # no user name for this uid (a container)
        actor = f"uid:{os.getuid()}"
    Gate.note(Caller.cli(actor), action, **fields)


@_needs_file("WIKIMEM_TOKENS_FILE")
def cmd_token_mint(args) -> int:
    from wikimem.host.access import append_token, mint_token, parse_duration

    lifetime = parse_duration(args.expires) if args.expires else None
    secret, entry = mint_token(args.name, args.scope, args.owner_prefix or "", expires_in=lifetime,
                               character=args.character)
    append_token(args.file, entry)
    prefixes = entry.get("owner_prefixes") or [entry["owner_prefix"]]
    reach = (", owners " + " or ".join(f"{p}*" for p in prefixes)) if any(prefixes) else ""
    speaks = f", as character {entry['character']}" if "character" in entry else ""
    until = f", expires {entry['expires']}" if "expires" in entry else ""
    print(f"minted {entry['name']!r} ({','.join(entry['scopes'])}{reach}{speaks}{until}) into {args.file}; "
          "the secret is shown only now:", file=sys.stderr)
    print(secret)
    _audit("token-mint", token=entry["sha256"][:16], token_name=entry["name"], scopes=",".join(entry["scopes"]),
           owner_prefix=",".join(prefixes) or None, character=entry.get("character"), expires=entry.get("expires"))
    return EXIT_OK


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())


def _last_uses() -> dict[str, float]:
    """When each token was last used, from the host's shared state (empty when the host never ran here)."""
    from wikimem.host.access import STATE_FILE, AuthState

    data = Path(read_setting("DATA_ROOT"))
    if not (data / STATE_FILE).is_file():
        return {}
    try:
        return AuthState(data).last_used()
    except Exception as exc:  # unreadable: the listing still shows the file
        print(f"wikimem: cannot read when tokens were last used ({exc})", file=sys.stderr)
        return {}


def _when(t: float | None) -> str:
    from datetime import datetime, timezone

    return "-" if t is None else datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


def _state(entry) -> str:
    if entry.revoked:
        return f"revoked {entry.revoked}"
    if entry.expired():
        return "expired"
    return f"rotated to {entry.rotated}" if entry.rotated else "active"


@_needs_file("WIKIMEM_TOKENS_FILE")
def cmd_token_list(args) -> int:
    from wikimem.host.access import expires_in_words, list_tokens

    used = _last_uses()
    entries = [e for e in list_tokens(args.file) if args.all or not (e.revoked or e.expired())]
    rows = [(e.id, e.principal.name, ",".join(sorted(e.principal.scopes, key=("read", "write", "admin").index)),
             ",".join(p + "*" for p in e.principal.owner_prefixes), e.principal.character or "-", e.created or "-",
             expires_in_words(e), _when(used.get(e.id)), _state(e)) for e in entries]
    _table(("ID", "NAME", "SCOPES", "OWNERS", "CHARACTER", "CREATED", "EXPIRES", "LAST USED", "STATE"), rows)
    return EXIT_OK


@_needs_file("WIKIMEM_TOKENS_FILE")
def cmd_token_rotate(args) -> int:
    from wikimem.host.access import parse_duration, rotate_token

    done = rotate_token(args.file, args.token, grace=parse_duration(args.grace))
    if done is None:
        print(f"wikimem: no active token with id or name {args.token!r} in {args.file}", file=sys.stderr)
        return EXIT_NOT_FOUND
    print(f"rotated {done.old.id} ({done.old.principal.name}) to {done.new.id}; the old secret works until "
          f"{done.old.expires}. The new secret is shown only now:", file=sys.stderr)
    print(done.secret)
    _audit("token-rotate", token=done.old.id, new_token=done.new.id, token_name=done.new.principal.name,
           old_expires=done.old.expires)
    return EXIT_OK


@_needs_file("WIKIMEM_TOKENS_FILE")
def cmd_token_revoke(args) -> int:
    from wikimem.host.access import revoke_tokens

    done = revoke_tokens(args.file, args.token, every=args.all)
    if not done:
        print(f"wikimem: no active token with id or name {args.token!r} in {args.file}", file=sys.stderr)
        return EXIT_NOT_FOUND
    for entry in done:
        print(f"revoked {entry.id} ({entry.principal.name})")
        _audit("token-revoke", token=entry.id, token_name=entry.principal.name)
    return EXIT_OK


def _read_password(prompt: str = "password: ") -> str:
    return getpass.getpass(prompt) if sys.stdin.isatty() else sys.stdin.readline().rstrip("\n")


@_needs_file("WIKIMEM_OPERATORS_FILE")
def cmd_operator_add(args) -> int:
    from webapp.session import hash_password
    from wikimem.host.access import Account, add_account, check_name

    check_name(args.name)
    account = Account(args.name, hash_password(_read_password()), args.role, args.owner_prefix)
    add_account(args.file, account)
    reach = f", owners {args.owner_prefix}*" if args.owner_prefix else ""
    print(f"added operator {args.name!r} ({args.role}{reach}) to {args.file}", file=sys.stderr)
    _audit("operator-add", account=args.name, role=args.role, owner_prefix=args.owner_prefix or None)
    return EXIT_OK


@_needs_file("WIKIMEM_OPERATORS_FILE")
def cmd_operator_list(args) -> int:
    from wikimem.host.access import list_accounts

    rows = [(a.name, a.role, (a.owner_prefix + "*") if a.owner_prefix else "*") for a in list_accounts(args.file)]
    _table(("NAME", "ROLE", "OWNERS"), rows)
    return EXIT_OK


@_needs_file("WIKIMEM_OPERATORS_FILE")
def cmd_operator_remove(args) -> int:
    from wikimem.host.access import remove_account

    if not remove_account(args.file, args.name):
        print(f"wikimem: no operator {args.name!r} in {args.file}", file=sys.stderr)
        return EXIT_NOT_FOUND
    print(f"removed operator {args.name!r}; their sessions have ended", file=sys.stderr)
    _audit("operator-remove", account=args.name)
    return EXIT_OK


def _update(args, **change) -> int:
    from wikimem.host.access import update_account

    try:
        account = update_account(args.file, args.name, **change)
    except LookupError as exc:
        print(f"wikimem: {exc.args[0]} in {args.file}", file=sys.stderr)
        return EXIT_NOT_FOUND
    print(f"operator {account.name!r} is now {account.role}; their sessions have ended", file=sys.stderr)
    if "role" in change:
        _audit("operator-role", account=account.name, role=account.role)
    else:
        _audit("operator-passwd", account=account.name)
    return EXIT_OK


@_needs_file("WIKIMEM_OPERATORS_FILE")
def cmd_operator_role(args) -> int:
    return _update(args, role=args.role)


@_needs_file("WIKIMEM_OPERATORS_FILE")
def cmd_operator_passwd(args) -> int:
    from webapp.session import hash_password

    return _update(args, password_hash=hash_password(_read_password("new password: ")))
