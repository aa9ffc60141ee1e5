"""holdfast-locks' build backend (PEP 517), written with the standard library
only, so `pip install` works offline in a fresh venv: pip's build isolation
has nothing to download (pyproject.toml: requires = []).

The wheel carries libholdfast compiled from this repository's C sources with
the system's C compiler (holdfast_locks/libholdfast.so.0, found first by
_lib.py; $HOLDFAST_LIB still overrides). The C sources come from csrc/ in
an sdist, or from the repository two levels up (bindings/python/../..).
Which sources and which version: meson.build says (base_sources,
lib_sources and the etcd client's files(...), project version), so the
library here is the one meson builds, minus nothing but the static archive.

Build needs: a C compiler, libjansson-dev, libcurl4-openssl-dev (Debian
names). Run time needs: libjansson4, libcurl4 (the shared objects the
library links).

Hooks: get_requires_for_build_{wheel,sdist}, prepare_metadata_for_build_wheel,
build_wheel, build_sdist. No editable install (PYTHONPATH=src with
HOLDFAST_LIB does that job in the repository: bindings/python/test.sh).
"""

from __future__ import annotations

import base64
import concurrent.futures
import hashlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bindings/python
PKG = "holdfast_locks"
LIBNAME = "libholdfast.so.0"  # the soname meson gives it (version 0.x)
DEB_BUILD = "gcc libc6-dev libjansson-dev libcurl4-openssl-dev"

# The repository files an sdist carries under csrc/ (besides the .c files
# meson.build lists): headers, the version template, the symbol script.
C_EXTRA = ("meson.build", "libholdfast.sym", "include/holdfast.h",
           "include/holdfast-version.h.in")
C_HEADER_DIRS = ("src/base", "src/lib", "src/lib/fs", "src/lib/etcd")


class BuildError(Exception):
    pass


# ---------------------------------------------------------------- metadata

def _pyproject() -> dict:
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        data = f.read()
    try:
        import tomllib  # Python 3.11+
        return tomllib.loads(data.decode())["project"]
    except ImportError:
        return _project_table(data.decode())


def _project_table(text: str) -> dict:
    """[project]'s keys of the simple forms pyproject.toml uses (strings,
    arrays of strings, one inline table of strings), for Pythons without
    tomllib."""
    import ast
    out, section, buf = {}, None, ""
    for line in text.splitlines():
        if not buf:
            s = line.strip()
            if s.startswith("["):
                section = s
                continue
            if section != "[project]" or not s or s.startswith("#") or "=" not in s:
                continue
            buf = s
        else:
            buf += " " + line.strip()
        if buf.count("[") != buf.count("]") or buf.count("{") != buf.count("}"):
            continue
        key, _, val = buf.partition("=")
        buf = ""
        val = val.strip()
        if val.startswith("{"):
            val = dict((k.strip(), ast.literal_eval(v.strip())) for k, _, v in
                       (p.partition("=") for p in val.strip("{} ").split(",") if p.strip()))
        else:
            val = ast.literal_eval(val)
        out[key.strip()] = val
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata(proj: dict) -> str:
    lines = ["Metadata-Version: 2.1", "Name: %s" % proj["name"], "Version: %s" % proj["version"],
             "Summary: %s" % proj.get("description", "")]
    if "requires-python" in proj:
        lines.append("Requires-Python: %s" % proj["requires-python"])
    lic = proj.get("license")
    if isinstance(lic, dict) and "text" in lic:
        lines.append("License: %s" % lic["text"])
    for c in proj.get("classifiers", []):
        lines.append("Classifier: %s" % c)
    for k, v in proj.get("urls", {}).items():
        lines.append("Project-URL: %s, %s" % (k, v))
    body = ""
    readme = proj.get("readme")
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(HERE, readme), encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


# ---------------------------------------------------------------- C sources

def _c_root() -> str:
    """csrc/ in an sdist, else the repository holding bindings/python."""
    for cand in (os.path.join(HERE, "csrc"), os.path.dirname(os.path.dirname(HERE))):
        mb = os.path.join(cand, "meson.build")
        if os.path.isfile(mb):
            with open(mb, encoding="utf-8") as f:
                if re.search(r"project\(\s*'holdfast'", f.read()):
                    return cand
    raise BuildError("holdfast-locks: libholdfast's C sources not found (csrc/ of the sdist, or the "
                     "repository around bindings/python): build from the repository or its sdist")


def _meson(root: str):
    """(version, [library .c files]) as meson.build lists them."""
    with open(os.path.join(root, "meson.build"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"project\('holdfast'.*?version\s*:\s*'([0-9]+\.[0-9]+\.[0-9]+)'", text, re.S)
    if not m:
        raise BuildError("holdfast-locks: no project version in %s/meson.build" % root)
    files = []
    for anchor in (r"base_sources = files\(", r"lib_sources = files\(",
                   r"static_library\('holdfast-etcdc', files\("):
        s = re.search(anchor + r"([^)]*)\)", text)
        if not s:
            raise BuildError("holdfast-locks: meson.build has no %s list" % anchor.replace("\\", ""))
        files += re.findall(r"'([^']+\.c)'", s.group(1))
    return m.group(1), files


def _run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise BuildError("holdfast-locks: %s failed (%s):\n%s" % (what, " ".join(map(shlex.quote, cmd)), p.stdout))
    return p.stdout


def _deps_flags():
    """cflags, libs for jansson and libcurl: pkg-config when it is there."""
    if shutil.which("pkg-config"):
        p = subprocess.run(["pkg-config", "--cflags", "--libs", "jansson", "libcurl"],
                           capture_output=True, text=True)
        if p.returncode == 0:
            flags = shlex.split(p.stdout)
            return [f for f in flags if not f.startswith(("-l", "-L"))], [f for f in flags if f.startswith(("-l", "-L"))]
    return [], ["-ljansson", "-lcurl"]


def _probe(cc, cflags, tmp):
    """One clear message naming the package when the compiler or a header is missing."""
    if not shutil.which(cc[0]):
        raise BuildError("holdfast-locks: no C compiler (%s) on PATH; it compiles libholdfast into the "
                         "wheel. Install one (Debian: apt install %s) or set CC." % (cc[0], DEB_BUILD))
    for header, pkg in (("jansson.h", "libjansson-dev"), ("curl/curl.h", "libcurl4-openssl-dev")):
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write("#include <%s>\nint main(void) { return 0; }\n" % header)
        p = subprocess.run(cc + cflags + ["-c", src, "-o", os.path.join(tmp, "probe.o")],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise BuildError("holdfast-locks: <%s> not found; install %s (Debian: apt install %s)\n%s"
                             % (header, pkg, pkg, p.stderr))


def compile_library(out_dir: str) -> str:
    """Compile libholdfast into out_dir/libholdfast.so.0; returns its path."""
    root = _c_root()
    version, sources = _meson(root)
    proj = _pyproject()
    if proj["version"] != version:
        raise BuildError("holdfast-locks: pyproject.toml says version %s, meson.build %s (one version)"
                         % (proj["version"], version))
    major, minor, patch = version.split(".")
    tmp = tempfile.mkdtemp(prefix="holdfast-locks-build.")
    try:
        with open(os.path.join(root, "include", "holdfast-version.h.in"), encoding="utf-8") as f:
            hdr = f.read()
        for k, v in (("major", major), ("minor", minor), ("patch", patch), ("version", version)):
            hdr = hdr.replace("@%s@" % k, v)
        with open(os.path.join(tmp, "holdfast-version.h"), "w", encoding="utf-8") as f:
            f.write(hdr)
        cc = shlex.split(os.environ.get("CC", "cc"))
        dep_cflags, dep_libs = _deps_flags()
        # meson.build's: gnu11, _GNU_SOURCE, release (-O3), hidden symbols, PIC;
        # meson's own default large-file flag.
        cflags = (["-std=gnu11", "-O3", "-fPIC", "-fvisibility=hidden", "-D_GNU_SOURCE",
                   "-D_FILE_OFFSET_BITS=64", "-I" + tmp, "-I" + os.path.join(root, "include"),
                   "-I" + root] + ["-I" + os.path.join(root, d) for d in C_HEADER_DIRS]
                  + dep_cflags + shlex.split(os.environ.get("CFLAGS", "")))
        _probe(cc, cflags, tmp)

        def one(src):
            obj = os.path.join(tmp, src.replace("/", "_") + ".o")
            _run(cc + cflags + ["-c", os.path.join(root, src), "-o", obj], "compiling " + src)
            return obj

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as ex:
            objs = list(ex.map(one, sources))
        lib = os.path.join(out_dir, LIBNAME)
        _run(cc + ["-shared", "-o", lib] + objs +
             ["-Wl,--version-script=" + os.path.join(root, "libholdfast.sym"),
              "-Wl,-soname," + LIBNAME, "-Wl,-z,defs", "-Wl,--as-needed"]
             + shlex.split(os.environ.get("LDFLAGS", "")) + dep_libs + ["-pthread"],
             "linking " + LIBNAME)
        return lib
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- archives

def _epoch() -> int:
    return int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01: zip's floor


def _py_files():
    base = os.path.join(HERE, "src", PKG)
    for name in sorted(os.listdir(base)):
        if name.endswith(".py") or name == "py.typed":
            yield os.path.join(base, name), "%s/%s" % (PKG, name)


def _tag() -> str:
    plat = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return "py3-none-" + plat


def _dist_info(proj):
    return "%s-%s.dist-info" % (_norm(proj["name"]), proj["version"])


def _wheel_meta(proj):
    wheel = ("Wheel-Version: 1.0\nGenerator: holdfast_pep517\nRoot-Is-Purelib: false\nTag: %s\n" % _tag())
    return {"METADATA": _metadata(proj), "WHEEL": wheel, "top_level.txt": PKG + "\n"}


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    proj = _pyproject()
    d = os.path.join(metadata_directory, _dist_info(proj))
    os.makedirs(d, exist_ok=True)
    for name, text in _wheel_meta(proj).items():
        with open(os.path.join(d, name), "w", encoding="utf-8") as f:
            f.write(text)
    return os.path.basename(d)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    proj = _pyproject()
    name = "%s-%s-%s.whl" % (_norm(proj["name"]), proj["version"], _tag())
    out = tempfile.mkdtemp(prefix="holdfast-locks-lib.")
    try:
        lib = compile_library(out)
        entries = [(arc, open(path, "rb").read(), 0o644) for path, arc in _py_files()]
        entries.append(("%s/%s" % (PKG, LIBNAME), open(lib, "rb").read(), 0o755))
    finally:
        shutil.rmtree(out, ignore_errors=True)
    di = _dist_info(proj)
    entries += [("%s/%s" % (di, n), t.encode(), 0o644) for n, t in _wheel_meta(proj).items()]
    record = []
    for arc, data, _ in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (arc, digest, len(data)))
    record.append("%s/RECORD,," % di)
    entries.append(("%s/RECORD" % di, ("\n".join(record) + "\n").encode(), 0o644))
    stamp = time.gmtime(_epoch())[:6]
    path = os.path.join(wheel_directory, name)
    with zipfile.ZipFile(path + ".part", "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data, mode in entries:
            zi = zipfile.ZipInfo(arc, stamp)
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    os.replace(path + ".part", path)
    return name


def _sdist_files():
    """(path on disk, path in the sdist) for everything an sdist carries."""
    for rel in ("pyproject.toml", "README.md", "build_backend/holdfast_pep517.py"):
        yield os.path.join(HERE, rel), rel
    for path, arc in _py_files():
        yield path, "src/" + arc
    tests = os.path.join(HERE, "tests")
    for name in sorted(os.listdir(tests)):
        if name.endswith(".py"):
            yield os.path.join(tests, name), "tests/" + name
    root = _c_root()
    _, sources = _meson(root)
    rels = list(C_EXTRA) + sources
    for d in C_HEADER_DIRS:
        rels += sorted("%s/%s" % (d, n) for n in os.listdir(os.path.join(root, d)) if n.endswith((".h", ".def")))
    for rel in rels:
        yield os.path.join(root, rel), "csrc/" + rel


def build_sdist(sdist_directory, config_settings=None):
    proj = _pyproject()
    base = "%s-%s" % (_norm(proj["name"]), proj["version"])
    name = base + ".tar.gz"
    path = os.path.join(sdist_directory, name)
    mtime = _epoch()

    def add(tar, arc, data, mode=0o644):
        ti = tarfile.TarInfo("%s/%s" % (base, arc))
        ti.size, ti.mtime, ti.mode = len(data), mtime, mode
        ti.uname = ti.gname = "root"
        tar.addfile(ti, io.BytesIO(data))

    with tarfile.open(path + ".part", "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for disk, arc in _sdist_files():
            with open(disk, "rb") as f:
                add(tar, arc, f.read())
        add(tar, "PKG-INFO", _metadata(proj).encode())
    os.replace(path + ".part", path)
    return name


if __name__ == "__main__":  # python3 build_backend/holdfast_pep517.py OUTDIR: the library alone
    try:
        print(compile_library(os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")))
    except BuildError as e:
        sys.exit(str(e))
