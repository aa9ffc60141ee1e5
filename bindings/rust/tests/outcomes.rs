//! docs/outcomes.md, the table of every outcome in every language, against
//! this crate: each row's rc is the row's `ErrorKind`, whose `name()` is the
//! row's name and whose `io::ErrorKind` is the row's; and a real ENOENT
//! becomes an `io::Error` of kind `NotFound` with its errno.
//!
//! The table is in the repository, not in the packaged crate (`cargo
//! package` carries the crate's own files): there the test says so and
//! passes; in the repository a missing table fails it.
use holdfast::{ErrorKind, Lock};
use std::io;
use std::path::{Path, PathBuf};

struct Row {
    name: String,
    symbol: String,
    rc: i32,
    rust: String,
    io: Option<String>,
}

fn quoted(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(String::from).collect()
}

/// The table's text, or None in a packaged crate (no repository around it).
fn table() -> Option<String> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = here.join("../../docs/outcomes.md");
    match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == io::ErrorKind::NotFound && here.join("Cargo.toml.orig").exists() => {
            eprintln!(
                "outcomes: skipped - a packaged crate ({}) has no docs/outcomes.md, the repository's",
                here.display()
            );
            None
        }
        Err(e) => panic!("{}: {e} (the crate is in the repository: the table must be there)", path.display()),
    }
}

fn rows(text: &str) -> Vec<Row> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 8, "{line}");
        let unquoted: String = cells[1].split('`').step_by(2).collect();
        let rc: i32 = unquoted.split_whitespace().next().and_then(|n| n.parse().ok()).expect(line);
        let r = quoted(cells[6]);
        out.push(Row {
            name: quoted(cells[0])[0].clone(),
            symbol: quoted(cells[1])[0].clone(),
            rc,
            rust: r[0].clone(),
            io: r.get(1).cloned(),
        });
    }
    assert!(out.len() > 10, "no table of outcomes");
    out
}

#[test]
fn every_row_is_the_crates() {
    let Some(text) = table() else { return };
    for r in rows(&text) {
        let k = ErrorKind::from_code(r.rc);
        assert_eq!(format!("{k:?}"), r.rust, "rc {}: the table says {}", r.rc, r.rust);
        assert_eq!(k.code(), r.rc);
        assert_eq!(k.name(), r.name, "the name of {k:?}");
        if !r.symbol.starts_with("HF_E") {
            assert_eq!(k, ErrorKind::Os(-r.rc), "{}", r.symbol);
        }
        match &r.io {
            Some(io_kind) => assert_eq!(&format!("{:?}", k.io_kind()), io_kind, "the io kind of {k:?}"),
            // "—": std has no category of its own for this errno
            None => assert!(matches!(k, ErrorKind::Os(_)), "{k:?}: no io kind in the table"),
        }
    }
}

#[test]
fn every_outcome_has_its_row() {
    let Some(text) = table() else { return };
    let rows = rows(&text);
    let kinds = [
        ErrorKind::Held, ErrorKind::Unreadable, ErrorKind::NotHeld, ErrorKind::NotYours,
        ErrorKind::TimedOut, ErrorKind::Conflict, ErrorKind::Unsafe, ErrorKind::Barrier,
        ErrorKind::Lost, ErrorKind::Canceled,
    ];
    for k in kinds {
        let n = rows.iter().filter(|r| r.rust == format!("{k:?}")).count();
        assert_eq!(n, 1, "{k:?} has {n} rows in docs/outcomes.md");
    }
}

#[test]
fn a_missing_directory_is_io_not_found_with_its_errno() {
    let dir: PathBuf = std::env::temp_dir().join(format!("holdfast-rs-outcomes-{}", std::process::id()));
    let e = Lock::new(dir.join("missing/L")).unwrap().acquire().err().expect("no such directory");
    assert_eq!(e.kind(), ErrorKind::Os(2));
    assert_eq!(e.name(), "ENOENT");
    let io_err = io::Error::from(e);
    assert_eq!(io_err.kind(), io::ErrorKind::NotFound);
    assert_eq!(io_err.raw_os_error(), Some(2));
    let e = ErrorKind::Held;
    assert_eq!(e.io_kind(), io::ErrorKind::WouldBlock);
}
