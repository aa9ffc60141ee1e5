//! Seed 001's case as the pods example runs it: registered when built,
//! refused to an intruder naming the holder, a delegated child, a crashed
//! child's scope back to its parent, released on drop.
use std::process::Command;

#[test]
fn pods_example_runs_seed_001s_case() {
    let exe = std::env::current_exe().unwrap();
    let pods = exe.parent().unwrap().parent().unwrap().join("examples/pods");
    let out = Command::new(&pods).output().expect("the pods example (cargo test builds it)");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "pods failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = |prefix: &str| {
        text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no line '{prefix}' in:\n{text}")).to_string()
    };
    assert!(line("pod intruder refused:").contains("held by pod a"), "{text}");
    assert!(line("pod c (pid").contains("\"name\":\"c\""), "{text}");
    let regained = line("pod c killed; reaped 1; a regains it:");
    assert!(!regained.contains("\"name\":\"c\"") && regained.contains("\"name\":\"b\""), "{text}");
    assert!(line("pod a after b's drop:").contains("(denied [])"), "{text}");
    assert!(text.contains("pod a: released on drop"), "{text}");
}
