"""docs/outcomes.md, the table of every outcome in every language, against
this binding: each row's rc raises the row's class, which is also the row's
built-in exception class (or no built-in one), with .code the row's name;
every errno Python maps to a built-in OSError subclass (PEP 3151) has its
row, and every Holdfast*Error class of the module appears in the table."""

import builtins
import errno
import os
import pickle
import re

import pytest

import holdfast_locks as hf
from holdfast_locks import errors

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs",
                     "outcomes.md")


def quoted(cell):
    return re.findall(r"`([^`]*)`", cell)


def rows():
    """Each row of the table as a dict by column."""
    out = []
    with open(TABLE, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("| `"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            assert len(cells) == 8, line
            name, rc_cell, exit_cell, json_cell, node, py, rust, meaning = cells
            rc = int(re.sub(r"`[^`]*`", "", rc_cell).split()[0])
            py_q = quoted(py)
            out.append({"name": quoted(name)[0], "symbol": quoted(rc_cell)[0], "rc": rc,
                        "json": quoted(json_cell)[0], "node": quoted(node)[0],
                        "cls": py_q[0], "base": py_q[1] if len(py_q) > 1 else None})
    assert len(out) > 10, "no table in %s" % TABLE
    return out


ROWS = rows()


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_row(row):
    rc = row["rc"]
    if row["symbol"].startswith("HF_E"):
        assert getattr(hf._lib, row["symbol"]) == rc
    else:
        assert getattr(errno, row["symbol"][1:]) == -rc
    e = errors.make_error(rc, "/some/path", {"pid": 7})
    cls = getattr(hf, row["cls"])
    assert type(e) is cls, "rc %d raises %s, the table says %s" % (rc, type(e).__name__, row["cls"])
    assert isinstance(e, hf.HoldfastError)
    assert e.code == row["name"] == row["json"] == hf.error_name(rc)
    assert e.rc == rc and e.path == "/some/path" and e.holder == {"pid": 7}
    if row["base"]:
        base = getattr(builtins, row["base"])
        assert isinstance(e, base)
    else:
        # no built-in exception class but Exception's own
        assert not any(issubclass(cls, b) for b in vars(builtins).values()
                       if isinstance(b, type) and issubclass(b, BaseException)
                       and b not in (Exception, BaseException))
    if not row["symbol"].startswith("HF_E"):
        # an errno: the built-in class Python itself gives it
        assert e.errno == -rc and e.filename == "/some/path"
        assert isinstance(e, type(OSError(-rc, "")))
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is cls and back.rc == rc and back.holder == {"pid": 7}


def test_every_errno_python_maps_has_its_row():
    in_table = {r["rc"] for r in ROWS}
    for n, sym in sorted(errno.errorcode.items()):
        builtin = type(OSError(n, ""))
        if builtin is OSError:
            assert type(errors.make_error(-n)) is hf.HoldfastOSError, sym
            continue
        assert -n in in_table, "%s (%s in Python) has no row in docs/outcomes.md" % (
            sym, builtin.__name__)


def test_every_class_is_in_the_table():
    named = {r["cls"] for r in ROWS}
    for name in hf.__all__:
        obj = getattr(hf, name)
        if isinstance(obj, type) and issubclass(obj, hf.HoldfastError) and obj is not hf.HoldfastError:
            assert name in named, "%s is in no row of docs/outcomes.md" % name


def test_the_node_and_json_names_are_the_library_name():
    for r in ROWS:
        assert r["node"] == r["json"] == r["name"], r
