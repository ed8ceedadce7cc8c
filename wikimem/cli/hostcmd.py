"""``serve``, ``token mint``, ``operator add``: running the host and managing its credentials.

Flask and the host layer are imported only when one of these commands runs,
so ``wikimem ls`` keeps working with the standard library alone.

``wikimem serve`` is the development server (one process, threads). In
production run gunicorn: ``gunicorn -c deploy/gunicorn.conf.py``.
"""

from __future__ import annotations

import getpass
import os
import secrets
import sys
from pathlib import Path

from . import EXIT_ERROR, EXIT_OK, Parser

ADMIN_TOKEN_FILE = "admin-token"
SECRET_KEY_FILE = "secret-key"


def register(sub) -> None:
    p = sub.add_parser("serve", help="run the host (development server; use gunicorn in production)")
    p.add_argument("--data", default=os.environ.get("WIKIMEM_DATA", "data"),
                   help="data root (default: $WIKIMEM_DATA or ./data)")
    p.add_argument("--bind", default=os.environ.get("WIKIMEM_BIND", "127.0.0.1:8000"),
                   help="HOST:PORT to listen on (default: $WIKIMEM_BIND or 127.0.0.1:8000)")
    p.add_argument("--demo", action="store_true", help="fill an empty data root with demo owners first")
    p.set_defaults(handler=cmd_serve)

    p = sub.add_parser("token", help="API tokens")
    tsub = p.add_subparsers(dest="token_command", metavar="ACTION", required=True, parser_class=Parser)
    m = tsub.add_parser("mint", help="make a token, store its hash, print the secret once")
    m.add_argument("name", help="who uses it, e.g. worker-elaina")
    m.add_argument("--scope", action="append", choices=("read", "write", "admin"), required=True,
                   help="read, write or admin (repeatable)")
    m.add_argument("--owner-prefix", default="", help="only owners whose id starts with this")
    m.add_argument("--file", default=os.environ.get("WIKIMEM_TOKENS_FILE"),
                   help="tokens file (default: $WIKIMEM_TOKENS_FILE)")
    m.set_defaults(handler=cmd_token_mint)

    p = sub.add_parser("operator", help="admin UI operator accounts")
    osub = p.add_subparsers(dest="operator_command", metavar="ACTION", required=True,
                            parser_class=Parser)
    a = osub.add_parser("add", help="add an account (password read from the terminal or stdin)")
    a.add_argument("name")
    a.add_argument("--owner-prefix", default="", help="only owners whose id starts with this")
    a.add_argument("--file", default=os.environ.get("WIKIMEM_OPERATORS_FILE"),
                   help="accounts file (default: $WIKIMEM_OPERATORS_FILE)")
    a.set_defaults(handler=cmd_operator_add)


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


def _admin_token(data: Path) -> str:
    """``$WIKIMEM_ADMIN_TOKEN``, else the one kept in the data root (made on first run, mode 0600)."""
    token = os.environ.get("WIKIMEM_ADMIN_TOKEN")
    if token:
        return token
    return _kept_secret(data / ADMIN_TOKEN_FILE, lambda: "wmk_dev_" + secrets.token_urlsafe(24))


def cmd_serve(args) -> int:
    host, port = _split_bind(args.bind)
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    token = _admin_token(data)
    from webapp import create_app  # flask only now

    config = {"DATA_ROOT": str(data), "ADMIN_TOKEN": token}
    if os.environ.get("WIKIMEM_SECRET_KEY"):
        config["ENV"] = os.environ.get("WIKIMEM_ENV", "production")
    else:
        # The development server keeps its session key next to the admin token,
        # so a restart does not sign every operator out.
        config.update(ENV="development", SECRET_KEY=_kept_secret(data / SECRET_KEY_FILE, lambda: secrets.token_hex(32)))
    app = create_app(config)
    if args.demo:
        from ..host.demo import seed_demo

        with app.app_context():
            from webapp import get_host

            seeded = seed_demo(get_host())
        print(f"demo data: {', '.join(seeded.owners)}" + ("" if seeded.created else " (already there)"))
        print(f"  a bad memorize run to roll back: {seeded.bad_run} (owner user:xnne, History page)")
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    print(f"wikimem host on http://{shown}:{port}/  (admin UI: /admin/, API: /api/v1/)")
    print(f"data root:   {data.resolve()}")
    print(f"admin token: {token}")
    sys.stdout.flush()
    app.run(host=host, port=port, threaded=True, use_reloader=False)
    return EXIT_OK


def cmd_token_mint(args) -> int:
    from ..host.tokens import append_token, mint_token

    if not args.file:
        print("wikimem: give --file or set WIKIMEM_TOKENS_FILE", file=sys.stderr)
        return EXIT_ERROR
    secret, entry = mint_token(args.name, args.scope, args.owner_prefix)
    append_token(args.file, entry)
    reach = f", owners {entry['owner_prefix']}*" if entry["owner_prefix"] else ""
    print(f"minted {entry['name']!r} ({','.join(entry['scopes'])}{reach}) into {args.file}; "
          "the secret is shown only now:", file=sys.stderr)
    print(secret)
    return EXIT_OK


def cmd_operator_add(args) -> int:
    from webapp.session import account_line

    if not args.file:
        print("wikimem: give --file or set WIKIMEM_OPERATORS_FILE", file=sys.stderr)
        return EXIT_ERROR
    password = getpass.getpass("password: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\n")
    line = account_line(args.name, password, args.owner_prefix)
    path = Path(args.file)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    print(f"added operator {args.name!r} to {path}", file=sys.stderr)
    return EXIT_OK
